#pragma once
// Reader for the JSON that nccl-tests writes with -J FILE.json (nccl-tests 2.18+, src/util.cu
// jsonOutput*): the command line ("args", whose binary names the op), the environment ("env",
// the NCCL_* settings of the run), NCCL's version code, the run header ("config"), the devices
// (the rank lines) and the results (size, count, type, redop, root and the out-of-place /
// in-place time, algbw, busbw, #wrong). It yields the same NcclTestsResult as the text parser,
// so calibrate and validate take either. Layout in docs/measurement-formats.md.
#include <string>
#include <string_view>

#include "calibration/fit/nccl_tests.hpp"

namespace commstack::fit {

// True when the text opens a JSON object and names the keys nccl-tests -J writes ("results", and
// "config" or "devices"): a shape test, so that a malformed file of this kind reaches the JSON
// reader's error rather than the text parser's.
bool looks_like_nccl_tests_json(std::string_view text);

// Throws InputError naming `origin`, the JSON path and what was expected for anything malformed.
NcclTestsResult parse_nccl_tests_json(std::string_view text, const std::string& origin,
                                      NcclTestsOp op_hint = NcclTestsOp::unknown);

}  // namespace commstack::fit
