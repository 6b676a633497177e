#include "sim/train/train.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "workloads/flops.hpp"
#include "workloads/graph/generator.hpp"
#include "workloads/parallel/layout.hpp"

namespace commstack::sim::train {
namespace {

using workloads::Op;
using workloads::OpKind;
using workloads::Stream;

double& slot(Breakdown& b, Stream s) {
  switch (s) {
    case Stream::tp: return b.tp;
    case Stream::cp: return b.cp;
    case Stream::ep: return b.ep;
    case Stream::dp: return b.dp;
    case Stream::pp: return b.pp;
    case Stream::compute: break;
  }
  return b.compute;
}

std::string describe(const workloads::OpGraph& g, const workloads::RankLayout& layout, const Op& op) {
  if (op.kind == OpKind::collective) {
    const auto& c = g.communicators[static_cast<std::size_t>(op.communicator)];
    return fmt::format("{} {} over {} ({} ranks)", op.name, to_string(op.collective), to_string(c.kind), c.ranks.size());
  }
  const int other = op.peer;
  const auto me = layout.coord(op.rank), them = layout.coord(other);
  const bool pp = op.stream == Stream::pp;
  return fmt::format("{} {} {} {} {}", op.name, op.kind == OpKind::send ? "to" : "from", pp ? "stage" : "cp rank",
                     pp ? them.pp : them.cp, pp ? fmt::format("(stage {})", me.pp) : fmt::format("(cp rank {})", me.cp));
}

}  // namespace

TrainResult simulate_training(Simulator& sim, const TrainSetup& setup) {
  const workloads::RankLayout layout(setup.par);
  CommCosts costs(sim, layout, setup.comm);
  return simulate_training(sim, setup, costs);
}

TrainResult simulate_training(Simulator& sim, const TrainSetup& setup, CommCosts& costs) {
  const auto& par = setup.par;
  if (sim.topology().gpu_count() != par.gpus()) {
    throw std::logic_error(fmt::format("simulate_training: topology has {} GPUs, the parallel config {}",
                                       sim.topology().gpu_count(), par.gpus()));
  }
  const workloads::RankLayout layout(par);
  workloads::GraphOptions go;
  if (setup.fold) go.ranks = layout.representative_ranks();
  TrainResult res;
  res.graph = workloads::generate_op_graph(setup.model, par, go);
  const auto& g = res.graph;

  // Durations, computed in op order so that the simulations run in a fixed order (determinism).
  const int simulations_before = costs.simulations();
  const long long flows_before = costs.flows();
  std::vector<double> dur(g.ops.size(), 0);
  for (const Op& op : g.ops) {
    double d = 0;
    switch (op.kind) {
      case OpKind::compute: d = workloads::compute_time(setup.compute, op, par.precision); break;
      case OpKind::collective:
        d = costs.collective(g.communicators[static_cast<std::size_t>(op.communicator)].kind, op.collective, op.bytes);
        break;
      case OpKind::send: d = costs.p2p(op.rank, op.peer, op.bytes); break;
      case OpKind::recv: d = costs.p2p(op.peer, op.rank, op.bytes); break;
    }
    dur[static_cast<std::size_t>(op.id)] = d;
  }
  res.simulations = costs.simulations() - simulations_before;
  res.flows = costs.flows() - flows_before;
  res.schedule = schedule_ops(g, [&](const Op& op) { return dur[static_cast<std::size_t>(op.id)]; });
  const Schedule& s = res.schedule;
  res.iteration_s = s.iteration_s;

  // Per generated rank: compute busy time, and what each idle gap of the compute stream waited for.
  std::map<int, Breakdown> per_rank;
  std::map<int, double> last_compute, finish;
  for (const Op& op : g.ops) {
    const auto i = static_cast<std::size_t>(op.id);
    finish[op.rank] = std::max(finish[op.rank], s.finish[i]);
    if (op.kind != OpKind::compute) continue;
    Breakdown& b = per_rank[op.rank];
    const double prev = last_compute[op.rank];
    const double gap = s.start[i] - prev;
    if (gap > 0) {
      const int by = s.binding[i];
      const Stream st = by >= 0 ? g.ops[static_cast<std::size_t>(by)].stream : Stream::compute;
      if (st == Stream::compute) b.tail += gap;  // cannot happen with a chained compute stream; kept visible
      else slot(b, st) += gap;
    }
    b.compute += dur[i];
    last_compute[op.rank] = s.finish[i];
  }
  res.critical_rank = g.ranks.empty() ? 0 : g.ranks.front();
  for (int r : g.ranks) {
    const double f = finish[r];
    if (f > finish[res.critical_rank]) res.critical_rank = r;
    per_rank[r].tail += res.iteration_s - last_compute[r];
    res.compute_bound_s = std::max(res.compute_bound_s, per_rank[r].compute);
    res.ranks.push_back({r, layout.coord(r).pp, per_rank[r].compute, f});
  }
  res.breakdown = per_rank[res.critical_rank];

  // Communication of the critical rank, grouped by distinct op.
  std::map<std::tuple<std::string, std::string, std::uint64_t>, CommLine> lines;
  for (const Op& op : g.ops) {
    if (op.rank != res.critical_rank || op.kind == OpKind::compute) continue;
    const double d = dur[static_cast<std::size_t>(op.id)];
    if (op.kind != OpKind::send) slot(res.comm_busy, op.stream) += d;  // a transfer counts once, at its receiver
    const std::string what = describe(g, layout, op);
    CommLine& l = lines[{to_string(op.stream), what, op.bytes}];
    l.stream = to_string(op.stream);
    l.what = what;
    l.bytes = op.bytes;
    l.each_s = d;
    l.count += 1;
    l.total_s += d;
  }
  for (auto& [k, l] : lines) res.comm.push_back(l);
  std::stable_sort(res.comm.begin(), res.comm.end(), [](const CommLine& a, const CommLine& b) { return a.total_s > b.total_s; });

  // Throughput and utilisation from the closed-form FLOP counts.
  const auto fl = workloads::iteration_flops(setup.model, par.global_batch, par.seq, par.recompute);
  res.model_flops = fl.model;
  res.hardware_flops = fl.hardware;
  res.gpus = par.gpus();
  res.peak_flops = par.precision == workloads::Precision::fp8 ? setup.compute.peak_fp8_flops : setup.compute.peak_bf16_flops;
  res.tokens_per_iteration = static_cast<double>(par.global_batch * par.seq);
  if (res.iteration_s > 0) {
    res.tokens_per_s = static_cast<double>(par.global_batch * par.seq) / res.iteration_s;
    res.model_tflops_per_gpu = fl.model / res.iteration_s / res.gpus / 1e12;
    res.hardware_tflops_per_gpu = fl.hardware / res.iteration_s / res.gpus / 1e12;
    res.mfu = workloads::mfu(fl.model, res.iteration_s, res.gpus, res.peak_flops);
    res.hfu = workloads::mfu(fl.hardware, res.iteration_s, res.gpus, res.peak_flops);
  }
  res.memory = workloads::estimate_memory(setup.model, par);
  return res;
}

}  // namespace commstack::sim::train
