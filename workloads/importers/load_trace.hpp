#pragma once
// Reads a trace from a file or a directory of per-rank files, whatever its format: Kineto /
// PyTorch profiler JSON, Chakra JSON or an NCCL_DEBUG=INFO log, told apart by their content
// (docs/trace-formats.md), or an OTF2 archive (its .otf2 anchor file or the directory holding
// traces.otf2). A directory is read whole: every regular file in it, sorted by name,
// all of one format (files of another kind, e.g. a README, are skipped with a warning).
#include <string>
#include <vector>

#include "workloads/importers/imported_trace.hpp"

namespace commstack::workloads::importers {

enum class TraceFormat { unknown, kineto, chakra, nccl_log };
std::string to_string(TraceFormat f);

// Looks at the first 1 MiB of the (decompressed) file.
TraceFormat detect_format(const std::string& path);

struct LoadOptions {
  std::string iteration;  // Kineto: ProfilerStep to take ("" = the last one every file has)
};

// Throws InputError for a path that does not exist, an empty directory, mixed formats, or a
// file no importer recognizes.
ImportedTrace load_trace(const std::string& path, const LoadOptions& options = {});

}  // namespace commstack::workloads::importers
