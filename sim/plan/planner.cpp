#include "sim/plan/planner.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <numeric>
#include <tuple>

#include <fmt/format.h>

#include "common/error.hpp"
#include "workloads/parallel/layout.hpp"

namespace commstack::sim::plan {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string describe(const workloads::ParallelConfig& p) {
  return fmt::format("tp {} pp {} vs {} dp {} cp {} ep {} etp {} zero {} mb {} sp {} recompute {}", p.tp,
                     p.pp, p.virtual_stages, p.dp, p.cp, p.ep, p.expert_tp(), p.zero, p.micro_batch,
                     p.sequence_parallel ? "on" : "off", workloads::to_string(p.recompute));
}

// One rank layout and the communication costs measured on it, shared by every configuration
// with that layout (the layout depends on the degrees only).
struct SharedCosts {
  SharedCosts(Simulator& sim, const workloads::ParallelConfig& par, const train::CommSettings& comm)
      : layout(par), costs(sim, layout, comm) {}
  workloads::RankLayout layout;
  train::CommCosts costs;
};

}  // namespace

PlanResult plan(Simulator& sim, const workloads::ModelSpec& model, const workloads::ComputeProfile& compute,
                const PlanOptions& options) {
  if (options.top < 1) throw InputError(fmt::format("--top: {} is out of range; expected at least 1", options.top));
  PlanResult out;
  const auto& topo = sim.topology();
  auto t0 = Clock::now();
  Enumeration en = enumerate_candidates(model, topo.gpu_count(), topo.gpus_per_node, options.space, compute.memory_bytes);
  out.enumerate_wall_s = since(t0);
  std::vector<Candidate> fits = std::move(en.fits);
  en.fits.clear();
  out.feasible = static_cast<long long>(fits.size());
  if (en.enumerated == 0) {
    throw InputError(fmt::format("plan: no combination of the requested degrees multiplies to the {} GPUs of the cluster",
                                 topo.gpu_count()));
  }
  if (!en.smallest_memory) {
    std::string why;
    for (const auto& [rule, n] : en.rule_counts) why += fmt::format("{}{} x {}", why.empty() ? "" : ", ", n, rule);
    throw InputError(fmt::format("plan: none of the {} enumerated configurations of {} on {} GPUs is valid ({})",
                                 en.enumerated, model.name, topo.gpu_count(), why));
  }
  if (fits.empty()) {
    const Candidate& s = *en.smallest_memory;
    const auto& w = s.memory.worst();
    throw InputError(fmt::format(
        "plan: none of the {} valid configurations of {} fits in the {:.1f} GiB of {}; the smallest needs {:.1f} GiB per "
        "GPU ({}: weights {:.1f}, gradients {:.1f}, optimizer {:.1f}, activations {:.1f} GiB); use more GPUs or allow "
        "more ZeRO / recompute / pipeline stages",
        en.enumerated - en.infeasible_rule, model.name, compute.memory_bytes / kGiB, compute.name, s.memory_bytes / kGiB,
        describe(s.par), w.weights / kGiB, w.gradients / kGiB, w.optimizer / kGiB, w.activations / kGiB));
  }

  // Bounds, then the order to simulate in (ties: enumeration order, so the run is deterministic).
  t0 = Clock::now();
  out.gpu_egress_Bps = gpu_egress_bandwidth(topo);
  std::vector<IterationBound> bounds;
  bounds.reserve(fits.size());
  const auto stopped = [&] { return options.stop_requested && options.stop_requested(); };
  for (const Candidate& c : fits) {
    if (stopped()) break;  // the bounds of a large space take a while too
    bounds.push_back(iteration_lower_bound(c, compute, out.gpu_egress_Bps));
  }
  if (bounds.size() < fits.size()) {
    out.unsimulated = static_cast<long long>(fits.size());
    out.bound_wall_s = since(t0);
    out.space = std::move(en);
    return out;
  }
  std::vector<std::size_t> order(fits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return bounds[a].seconds < bounds[b].seconds; });
  out.bound_wall_s = since(t0);

  t0 = Clock::now();
  // The layout's key: every degree that places a rank or forms a group.
  std::map<std::tuple<int, int, int, int, int, int>, std::unique_ptr<SharedCosts>> shared;
  std::vector<PlanEntry> done;  // simulated, kept sorted by iteration time
  const auto k = static_cast<std::size_t>(options.top);
  std::size_t next = 0;
  for (; next < order.size(); ++next) {
    const std::size_t i = order[next];
    if (done.size() >= k && bounds[i].seconds >= done[k - 1].result.iteration_s) break;
    if (stopped()) {
      out.unsimulated = static_cast<long long>(order.size() - next);
      next = order.size();
      break;
    }
    const Candidate& c = fits[i];
    auto& sc = shared[{c.par.tp, c.par.cp, c.par.dp, c.par.pp, c.par.ep, c.par.expert_tp()}];
    if (!sc) sc = std::make_unique<SharedCosts>(sim, c.par, options.comm);
    train::TrainSetup setup;
    setup.model = c.model;
    setup.par = c.par;
    setup.compute = compute;
    setup.comm = options.comm;
    PlanEntry e{c, bounds[i], train::simulate_training(sim, setup, sc->costs)};
    e.result.graph = {};
    e.result.schedule = {};
    out.simgrid_runs += e.result.simulations;
    ++out.simulated;
    // Insert after every entry that is not slower (stable: equal times keep simulation order).
    auto at = std::upper_bound(done.begin(), done.end(), e.result.iteration_s,
                               [](double t, const PlanEntry& x) { return t < x.result.iteration_s; });
    done.insert(at, std::move(e));
    if (done.size() > k) done.pop_back();
    if (options.progress) options.progress(out.simulated, out.simulated + static_cast<long long>(order.size() - next - 1));
  }
  out.pruned = static_cast<long long>(order.size() - next);
  if (next < order.size()) out.best_bound_pruned_s = bounds[order[next]].seconds;
  out.simulate_wall_s = since(t0);
  out.ranked = std::move(done);
  out.space = std::move(en);
  return out;
}

}  // namespace commstack::sim::plan
