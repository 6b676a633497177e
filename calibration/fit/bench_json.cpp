#include "calibration/fit/bench_json.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/input_file.hpp"

namespace commstack::fit {

bool looks_like_bench_json(std::string_view text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  return !j.is_discarded() && j.is_object() && j.contains("schema") && j["schema"] == bench::kSchemaName;
}

bool is_bench_json(const std::string& path) {
  return is_input_file(path) && looks_like_bench_json(read_input_file(path));
}

NcclTestsOp nccl_tests_op_of(bench::Op op) {
  switch (op) {
    case bench::Op::all_reduce: return NcclTestsOp::all_reduce;
    case bench::Op::all_gather: return NcclTestsOp::all_gather;
    case bench::Op::reduce_scatter: return NcclTestsOp::reduce_scatter;
    case bench::Op::broadcast: return NcclTestsOp::broadcast;
    case bench::Op::reduce: return NcclTestsOp::reduce;
    case bench::Op::alltoall: return NcclTestsOp::alltoall;
    case bench::Op::sendrecv: return NcclTestsOp::sendrecv;
  }
  return NcclTestsOp::unknown;
}

std::vector<BenchSeries> bench_series(const bench::BenchReport& rep, const std::string& origin) {
  std::vector<BenchSeries> out;
  const auto& m = rep.machine;
  std::vector<NcclTestsRank> ranks;
  for (std::size_t r = 0; r < m.hostnames.size(); ++r) {
    NcclTestsRank k;
    k.rank = static_cast<int>(r);
    k.host = m.hostnames[r];
    int local = 0;
    for (std::size_t q = 0; q < r; ++q) local += m.hostnames[q] == m.hostnames[r];
    k.device = local;
    k.gpu_name = m.gpu_model;
    ranks.push_back(k);
  }
  for (const auto& s : rep.collectives) {
    if (s.status != "ok" || s.points.empty()) continue;
    BenchSeries b;
    b.algo = bench::to_string(s.algo);
    b.proto = bench::to_string(s.proto);
    b.ctas = s.ctas;
    NcclTestsResult& res = b.result;
    res.origin = fmt::format("{} [{} algo={} proto={} ctas={}]", origin, bench::to_string(s.op), b.algo, b.proto, b.ctas);
    res.op = nccl_tests_op_of(s.op);
    res.op_source = "explicit";
    res.nccl_version = m.nccl_version;
    res.run.present = true;
    res.run.n_gpus = 1;  // nccl-tests' nGpus is GPUs per thread (-g): commstack-bench drives one GPU per rank
    res.run.warmup_iters = rep.settings.warmup;
    res.run.iters = rep.settings.iters;
    res.run.min_bytes = s.points.front().bytes;
    res.run.max_bytes = s.points.back().bytes;
    res.ranks = ranks;
    res.n_ranks = m.nranks;
    res.n_hosts = m.nodes;
    res.gpus_per_node = m.gpus_per_node;
    res.ranks_complete = !ranks.empty();
    res.gpu_model = m.gpu_model;
    res.columns = {"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong"};
    for (const auto& p : s.points) {
      NcclTestsRow row;
      row.size_bytes = p.bytes;
      row.count = p.count;
      row.type = rep.settings.dtype;
      const bool reducing = s.op == bench::Op::all_reduce || s.op == bench::Op::reduce_scatter || s.op == bench::Op::reduce;
      row.redop = reducing ? "sum" : "none";
      row.root = (s.op == bench::Op::broadcast || s.op == bench::Op::reduce) ? 0 : -1;
      NcclTestsTiming t;
      t.time_us = p.time_us.median;
      t.algbw_GBps = p.algbw_GBps;
      t.busbw_GBps = p.busbw_GBps;
      t.i_min_us = p.time_us.min;
      t.i_max_us = p.time_us.max;
      t.i_p99_us = p.time_us.p90;  // the bench keeps p90 over repetitions; nearest column nccl-tests has
      t.i_cv_percent = p.time_us.cv * 100;
      row.out_of_place = t;
      res.rows.push_back(row);
    }
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<BenchSeries> load_bench_series(const std::string& path) { return bench_series(bench::load_report(path), path); }

BenchSeries select_bench_series(const std::string& path, NcclTestsOp op, std::string_view algo, std::string_view proto,
                                int ctas) {
  return select_bench_series(bench::load_report(path), path, op, algo, proto, ctas);
}

BenchSeries select_bench_series(const bench::BenchReport& report, const std::string& path, NcclTestsOp op,
                                std::string_view algo, std::string_view proto, int ctas) {
  const bench::Algo want_algo = bench::algo_from_name(algo, fmt::format("{}: algo", path));
  const bench::Proto want_proto = bench::proto_from_name(proto, fmt::format("{}: proto", path));
  const auto all = bench_series(report, path);
  std::string have;
  for (const auto& s : all) {
    if (s.result.op == op && s.algo == bench::to_string(want_algo) && s.proto == bench::to_string(want_proto) &&
        s.ctas == ctas)
      return s;
    have += fmt::format(" {}/{}/{}/{}", to_string(s.result.op), s.algo, s.proto, s.ctas);
  }
  throw InputError(fmt::format("{}: no measured series {} algo={} proto={} ctas={} in this bench report (it holds "
                               "op/algo/proto/ctas:{})",
                               path, to_string(op), algo, proto, ctas, have.empty() ? " none" : have));
}

}  // namespace commstack::fit
