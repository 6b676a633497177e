#pragma once
// An OTF2 archive (a Score-P trace, or commstack's own --otf2 output) as an imported trace for
// `replay` (docs/otf2.md): one rank per process location group, one lane per location, the
// whole trace taken as one iteration. Per location, innermost regions become ops with their
// traced duration: a region holding an MpiCollectiveBegin/End is a collective (re-simulated on
// the target cluster when it is an all-reduce, all-gather, reduce-scatter or all-to-all), one
// holding an MpiSend/MpiIsend or MpiRecv/MpiIrecv a send or recv, any other innermost region a
// compute op (GPU when its location is an accelerator stream or its region is CUDA, host
// otherwise). Enclosing regions (main, user functions around them) add no op. Ops on one location
// are chained in order; archives written by commstack --otf2 also carry each op's dependencies
// on the rank's other streams (attributes commstack_op / commstack_after), which become deps.
#include <string>

#include "workloads/importers/imported_trace.hpp"
#include "workloads/importers/otf2_reader.hpp"

namespace commstack::workloads::importers {

// Throws InputError for an unreadable archive (read_otf2_archive) or one with no region events.
ImportedTrace import_otf2(const std::string& path);
// The same on an archive already read (read_otf2_archive); InputError for a rank number out of range
// in a location group's name, or no region events.
ImportedTrace import_otf2_archive(const Otf2Archive& archive);

}  // namespace commstack::workloads::importers
