#pragma once
// Helpers for the train tests: a SimGrid engine cannot be created twice in one process, so a
// test that needs two topologies (or two independent runs) forks a child per run and reads its
// answer back through a pipe.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "approx.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/train/train.hpp"
#include "topologies/cluster.hpp"
#include "workloads/graph/op_graph.hpp"
#include "workloads/parallel/parallel.hpp"

namespace train_test {

inline std::string in_child(const std::function<std::string()>& fn) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    int code = 0;
    try {
      out = fn();
    } catch (const std::exception& e) {
      out = std::string("EXCEPTION: ") + e.what();
      code = 1;
    }
    std::size_t off = 0;
    while (off < out.size()) {
      const ssize_t w = write(fds[1], out.data() + off, out.size() - off);
      if (w <= 0) break;
      off += static_cast<std::size_t>(w);
    }
    close(fds[1]);
    _exit(code);
  }
  close(fds[1]);
  std::string out;
  char buf[65536];
  ssize_t n = 0;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("child run failed: " + out);
  return out;
}

// A validated setup for `model` on `gpus` GPUs.
inline commstack::sim::train::TrainSetup setup(const std::string& model, int tp, int pp, int dp, int gpus,
                                               std::int64_t mb, std::int64_t gbs,
                                               commstack::workloads::Recompute rc = commstack::workloads::Recompute::full) {
  commstack::sim::train::TrainSetup s;
  s.model = commstack::workloads::builtin_model(model);
  s.par.tp = tp;
  s.par.pp = pp;
  s.par.dp = dp;
  s.par.micro_batch = mb;
  s.par.global_batch = gbs;
  s.par.recompute = rc;
  commstack::workloads::validate(s.model, s.par, gpus, "test");
  s.compute = commstack::workloads::builtin_compute_profile("a100-80gb");
  return s;
}

// The one op called `name` of rank 0's first micro-batch in `layer` (REQUIREs exactly one).
inline const commstack::workloads::Op& only(const commstack::workloads::OpGraph& g, const std::string& name,
                                            int layer) {
  const commstack::workloads::Op* found = nullptr;
  int count = 0;
  for (const auto& op : g.ops) {
    if (op.rank == 0 && op.micro_batch == 0 && op.layer == layer && name == op.name) {
      found = &op;
      ++count;
    }
  }
  REQUIRE(count == 1);
  return *found;
}

inline bool waits_for(const commstack::workloads::Op& op, const commstack::workloads::Op& dep) {
  return std::find(op.deps.begin(), op.deps.end(), dep.id) != op.deps.end();
}

// One simulated iteration, as the overlap tests compare them: its time, the exposed time of the
// communication the option overlaps (one field of the breakdown), the compute-only bound.
struct Timing {
  double iteration_s = 0, exposed_s = 0, compute_bound_s = 0;
};

// Simulates `s` on `nodes` nodes of the preset `cluster` in a child process (one SimGrid engine per
// process). `exposed` picks the breakdown field, e.g. &Breakdown::tp.
inline Timing time_in_child(const commstack::sim::train::TrainSetup& s, const std::string& cluster, int nodes,
                            double commstack::sim::train::Breakdown::*exposed) {
  const std::string out = in_child([&] {
    const auto topo =
        commstack::topologies::build_topology(commstack::topologies::load_cluster(cluster), nodes);
    commstack::sim::Simulator simulator(topo);
    const auto r = commstack::sim::train::simulate_training(simulator, s);
    return fmt::format("{:.17g} {:.17g} {:.17g}", r.iteration_s, r.breakdown.*exposed, r.compute_bound_s);
  });
  Timing t;
  if (std::sscanf(out.c_str(), "%lf %lf %lf", &t.iteration_s, &t.exposed_s, &t.compute_bound_s) != 3)
    throw std::runtime_error("unreadable child answer: " + out);
  return t;
}

// An overlap option reorders the same work: the compute bound stays, the iteration gets faster
// but not below the bound, it saves at most the exposed time it overlaps, and less of it is exposed.
inline void check_overlap_gain(const Timing& off, const Timing& on) {
  CAPTURE(off.iteration_s);
  CAPTURE(on.iteration_s);
  CHECK(on.compute_bound_s == approx(off.compute_bound_s).epsilon(1e-12));
  CHECK(on.iteration_s < off.iteration_s);
  CHECK(on.iteration_s >= on.compute_bound_s);
  CHECK(off.iteration_s - on.iteration_s <= off.exposed_s * (1 + 1e-9));
  CHECK(on.exposed_s < off.exposed_s);
}

}  // namespace train_test
