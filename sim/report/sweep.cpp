#include "sim/report/sweep.hpp"

#include <nlohmann/json.hpp>
#include <fmt/format.h>

#include "sim/report/breakdown.hpp"

namespace commstack::sim {
namespace {

const char* redop(CollectiveOp op) {
  switch (op) {
    // As nccl-tests prints it: the ops it runs with -o (default sum), sendrecv among them; all_gather,
    // alltoall and broadcast pass "none" (src/*.cu TimeTest calls).
    case CollectiveOp::allreduce:
    case CollectiveOp::reducescatter:
    case CollectiveOp::reduce:
    case CollectiveOp::sendrecv: return "sum";
    default: return "none";
  }
}

// The nccl-tests binary of an op, without "_perf".
const char* nccl_tests_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::allreduce: return "all_reduce";
    case CollectiveOp::allgather: return "all_gather";
    case CollectiveOp::reducescatter: return "reduce_scatter";
    case CollectiveOp::alltoall: return "alltoall";
    case CollectiveOp::broadcast: return "broadcast";
    case CollectiveOp::reduce: return "reduce";
    case CollectiveOp::sendrecv: return "sendrecv";
  }
  return "all_reduce";
}

int root_column(const SweepInfo& info) {
  return info.op == CollectiveOp::broadcast || info.op == CollectiveOp::reduce ? info.root : -1;
}

// nccl-tests' time format: 2 decimals below 100 us, 1 below 10 ms, none above.
std::string time_column(double us) {
  if (us >= 10000.0) return fmt::format("{:7.0f}", us);
  if (us >= 100.0) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

}  // namespace

SweepSize sweep_size(CollectiveOp op, std::uint64_t requested_bytes, int nranks, int type_size) {
  const auto ts = static_cast<std::uint64_t>(type_size);
  const auto n = static_cast<std::uint64_t>(nranks);
  const std::uint64_t count = requested_bytes / ts;
  SweepSize s;
  switch (op) {
    case CollectiveOp::allgather:
    case CollectiveOp::reducescatter:
    case CollectiveOp::alltoall: {
      // nccl-tests (src/all_gather.cu, reduce_scatter.cu, alltoall.cu *GetCollByteCount:
      // (count/nranks) & -(16/eltSize)): the count per rank (per peer for alltoall), rounded down
      // to 16 bytes, is what it prints and what each rank contributes (sends to each peer).
      const std::uint64_t align = ts < 16 ? 16 / ts : 1;
      s.count = count / n / align * align;
      s.bytes = s.count * ts * n;
      break;
    }
    default:
      s.count = count;
      s.bytes = count * ts;
  }
  return s;
}

std::vector<std::uint64_t> size_sweep(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor) {
  std::vector<std::uint64_t> sizes;
  std::uint64_t s = min_bytes;
  if (s == 0) {
    sizes.push_back(0);
    s = 1;
  }
  while (s <= max_bytes) {
    sizes.push_back(s);
    if (s > max_bytes / factor) break;
    s *= factor;
  }
  return sizes;
}

void set_bandwidths(SweepPoint& p, CollectiveOp op, int nranks) {
  if (p.time_s > 0) {
    p.algbw_GBps = static_cast<double>(p.size.bytes) / 1e9 / p.time_s;
    p.busbw_GBps = p.algbw_GBps * bus_bandwidth_factor(op, nranks);
  } else {
    p.algbw_GBps = p.busbw_GBps = 0;
  }
}

std::string format_nccl_tests(const SweepInfo& info, const std::vector<SweepPoint>& points) {
  std::string out;
  const std::string model =
      info.model.empty() ? fmt::format(", {} channel(s)", info.channels) : "; " + info.model;
  out += fmt::format("# commstack {} prediction: {} ranks ({} nodes x {} GPUs) on {}{}\n", to_string(info.op),
                     info.nranks, info.nodes, info.gpus_per_node, info.cluster, model);
  // nccl-tests' own line naming the binary (src/util.cu), which its readers (ours among them) take
  // the collective from: all-gather and alltoall print the same columns.
  out += fmt::format("# Collective test starting: {}_perf\n", nccl_tests_name(info.op));
  out += fmt::format(
      "# nThread 1 nGpus {} minBytes {} maxBytes {} step: {}(factor) warmup iters: 0 iters: 1 agg iters: 1 "
      "validation: 0 graph: {}\n",
      info.gpus_per_thread, info.min_bytes, info.max_bytes, info.step_factor, info.graph);
  out += "#\n";
  out += "#                                                              out-of-place                       in-place\n";
  out += "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  out += "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
  double bw_sum = 0;
  for (const auto& p : points) {
    // The simulator does not distinguish in-place from out-of-place: both columns are the prediction.
    const std::string perf = fmt::format("  {:>7}  {:6.2f}  {:6.2f}  {:>5}", time_column(p.time_s * 1e6), p.algbw_GBps,
                                         p.busbw_GBps, "N/A");
    out += fmt::format("{:12}  {:12}  {:>8}  {:>6}  {:6}{}{}\n", p.size.bytes, p.size.count, info.type,
                       redop(info.op), root_column(info), perf, perf);
    bw_sum += p.busbw_GBps;
  }
  out += "# Out of bounds values : 0 OK\n";
  out += fmt::format("# Avg bus bandwidth    : {:g}\n", points.empty() ? 0.0 : bw_sum / static_cast<double>(points.size()));
  out += "#\n";
  return out;
}

std::string format_csv(const SweepInfo& info, const std::vector<SweepPoint>& points) {
  // A stack-model point has no flows: its fidelity is "-", its flows and chunks 0, and its NCCL
  // algorithm, protocol and channels fill the next three columns ("-", "-", 0 for a SimGrid point
  // and a zero-byte call). --breakdown adds the layers' columns, as validate's CSV.
  std::string out =
      "op,nranks,size_bytes,count,type,redop,root,time_us,algbw_GBps,busbw_GBps,fidelity,flows,chunks,"
      "algorithm,"
      "protocol,nccl_channels";
  out += info.breakdown ? fmt::format(",{}\n", kBreakdownCsvColumns) : "\n";
  const auto or_dash = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  for (const auto& p : points) {
    out +=
        fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", to_string(info.op), info.nranks,
                    p.size.bytes, p.size.count, info.type, redop(info.op), root_column(info), p.time_s * 1e6,
                    p.algbw_GBps, p.busbw_GBps, p.stack_model ? "-" : to_string(p.fidelity), p.flows,
                    p.stack_model ? 0 : p.chunks, or_dash(p.algorithm), or_dash(p.protocol), p.nccl_channels);
    out += info.breakdown ? fmt::format(",{}\n", breakdown_csv(p.breakdown)) : "\n";
  }
  return out;
}

std::string format_json(const SweepInfo& info, const std::vector<SweepPoint>& points) {
  nlohmann::ordered_json doc;
  doc["tool"] = "commstack collective";
  doc["op"] = to_string(info.op);
  doc["cluster"] = info.cluster;
  doc["nranks"] = info.nranks;
  doc["nodes"] = info.nodes;
  doc["gpus_per_node"] = info.gpus_per_node;
  doc["model"] = info.model;
  if (info.channels > 0) doc["channels"] = info.channels;  // the SimGrid simulation's rings
  doc["type"] = info.type;
  doc["redop"] = redop(info.op);
  doc["root"] = root_column(info);
  auto& rows = doc["results"] = nlohmann::ordered_json::array();
  for (const auto& p : points) {
    nlohmann::ordered_json row{{"size_bytes", p.size.bytes},
                               {"count", p.size.count},
                               {"time_us", p.time_s * 1e6},
                               {"algbw_GBps", p.algbw_GBps},
                               {"busbw_GBps", p.busbw_GBps}};
    if (!p.stack_model) {
      row["fidelity"] = to_string(p.fidelity);
      row["flows"] = p.flows;
      row["chunks"] = p.chunks;
    } else {
      // A zero-byte call (NCCL returns at once) has no algorithm: "-", "-", 0 as in the CSV.
      row["algorithm"] = p.algorithm.empty() ? "-" : p.algorithm;
      row["protocol"] = p.protocol.empty() ? "-" : p.protocol;
      row["nccl_channels"] = p.nccl_channels;
    }
    if (info.breakdown)
      row["breakdown"] = breakdown_json<nlohmann::ordered_json>(p.breakdown);  // as validate's
    rows.push_back(row);
  }
  return doc.dump(2) + "\n";
}

}  // namespace commstack::sim
