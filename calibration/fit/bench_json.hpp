#pragma once
// Reader for commstack-bench reports (calibration/bench/report.hpp): turns each measured collective
// series into the same NcclTestsResult rows the nccl-tests parser produces, so the fitting code
// (profile_fit) can take a bench JSON wherever it takes an nccl-tests log. The series' forced
// algorithm / protocol / CTA count comes along so the caller can set the matching knobs.
#include <string>
#include <string_view>
#include <vector>

#include "calibration/bench/report.hpp"
#include "calibration/fit/nccl_tests.hpp"

namespace commstack::fit {

struct BenchSeries {
  NcclTestsResult result;     // rows: size, count, float, median time as out-of-place time, algbw, busbw
  std::string algo = "default";  // bench names: default, ring, tree, nvls, nvls_tree, collnet_direct, ...
  std::string proto = "default"; // default, ll, ll128, simple
  int ctas = 0;                  // 0 = NCCL's default channel count
};

// Whether the text is a JSON document whose "schema" is "commstack-bench" (false for anything else:
// the caller then tries the text parsers).
bool looks_like_bench_json(std::string_view text);
// The same for a file (false for unreadable files too).
bool is_bench_json(const std::string& path);

NcclTestsOp nccl_tests_op_of(bench::Op op);

// Every series with status "ok" and at least one point, in report order.
std::vector<BenchSeries> bench_series(const bench::BenchReport& report, const std::string& origin);
std::vector<BenchSeries> load_bench_series(const std::string& path);

// The series for `op` under algo / proto / ctas (bench names, case-insensitive; NCCL spellings
// like "NVLSTree" accepted). Throws InputError naming the file and listing what it holds.
BenchSeries select_bench_series(const std::string& path, NcclTestsOp op, std::string_view algo = "default",
                                std::string_view proto = "default", int ctas = 0);
// The same on a report already read (origin: the file it came from, for the messages).
BenchSeries select_bench_series(const bench::BenchReport& report, const std::string& origin, NcclTestsOp op,
                                std::string_view algo = "default", std::string_view proto = "default",
                                int ctas = 0);

}  // namespace commstack::fit
