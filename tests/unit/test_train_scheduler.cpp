// The op-graph scheduler on hand-made graphs whose timing has a closed form.
#include <doctest/doctest.h>

#include "approx.hpp"

#include "sim/train/scheduler.hpp"

using namespace commstack;
using workloads::Op;
using workloads::OpGraph;
using workloads::OpKind;
using workloads::Stream;

namespace {

int add(OpGraph& g, int rank, OpKind kind, Stream stream, double dur, std::vector<int> deps, std::vector<double>& durs) {
  Op op;
  op.id = static_cast<int>(g.ops.size());
  op.rank = rank;
  op.kind = kind;
  op.stream = stream;
  op.deps = std::move(deps);
  g.ops.push_back(op);
  durs.push_back(dur);
  return op.id;
}

}  // namespace

TEST_CASE("train: scheduler overlaps a non-blocking collective with compute and waits for the slowest member") {
  OpGraph g;
  g.world = 2;
  g.ranks = {0, 1};
  const int comm = g.communicator(workloads::GroupKind::dp, {0, 1});
  std::vector<double> d;
  // rank 0: c(1) -> allreduce(2) ; c(1.5) after the first compute ; optimizer after both.
  const int a0 = add(g, 0, OpKind::compute, Stream::compute, 1.0, {}, d);
  const int r0 = add(g, 0, OpKind::collective, Stream::dp, 2.0, {a0}, d);
  const int b0 = add(g, 0, OpKind::compute, Stream::compute, 1.5, {a0}, d);
  const int o0 = add(g, 0, OpKind::compute, Stream::compute, 0.25, {b0, r0}, d);
  // rank 1 reaches the collective at t = 3.
  const int a1 = add(g, 1, OpKind::compute, Stream::compute, 3.0, {}, d);
  const int r1 = add(g, 1, OpKind::collective, Stream::dp, 2.0, {a1}, d);
  for (int id : {r0, r1}) {
    g.ops[static_cast<std::size_t>(id)].communicator = comm;
    g.ops[static_cast<std::size_t>(id)].instance = 0;
    g.ops[static_cast<std::size_t>(id)].collective = workloads::Collective::all_reduce;
  }
  const auto s = sim::train::schedule_ops(g, [&](const Op& op) { return d[static_cast<std::size_t>(op.id)]; });
  CHECK(s.start[static_cast<std::size_t>(r0)] == approx(3.0));  // waits for rank 1
  CHECK(s.finish[static_cast<std::size_t>(r1)] == approx(5.0));
  CHECK(s.start[static_cast<std::size_t>(b0)] == approx(1.0));  // overlaps the wait
  CHECK(s.start[static_cast<std::size_t>(o0)] == approx(5.0));
  CHECK(s.binding[static_cast<std::size_t>(o0)] == r0);
  CHECK(s.binding[static_cast<std::size_t>(r0)] == r1);  // the late member bound it
  CHECK(s.iteration_s == approx(5.25));
}

TEST_CASE("train: scheduler starts a send and its recv together, a folded peer mirrors our own send") {
  OpGraph g;
  g.world = 4;
  g.ranks = {0, 2};  // ranks 1 and 3 are folded away
  std::vector<double> d;
  const int c0 = add(g, 0, OpKind::compute, Stream::compute, 2.0, {}, d);
  const int s0 = add(g, 0, OpKind::send, Stream::pp, 0.5, {c0}, d);
  const int rv = add(g, 2, OpKind::recv, Stream::pp, 0.5, {}, d);
  const int c2 = add(g, 2, OpKind::compute, Stream::compute, 1.0, {rv}, d);
  g.ops[static_cast<std::size_t>(s0)].peer = 2;
  g.ops[static_cast<std::size_t>(rv)].peer = 0;
  g.ops[static_cast<std::size_t>(s0)].tag = g.ops[static_cast<std::size_t>(rv)].tag = 7;
  // Rank 2 also exchanges with folded rank 3 (a CP ring): its recv leaves 3 when rank 2's own send leaves.
  const int s2 = add(g, 2, OpKind::send, Stream::cp, 0.25, {c2}, d);
  const int r2 = add(g, 2, OpKind::recv, Stream::cp, 0.25, {}, d);
  const int c2b = add(g, 2, OpKind::compute, Stream::compute, 1.0, {c2, r2}, d);
  g.ops[static_cast<std::size_t>(s2)].peer = 3;
  g.ops[static_cast<std::size_t>(r2)].peer = 3;
  g.ops[static_cast<std::size_t>(s2)].tag = g.ops[static_cast<std::size_t>(r2)].tag = 9;
  const auto s = sim::train::schedule_ops(g, [&](const Op& op) { return d[static_cast<std::size_t>(op.id)]; });
  CHECK(s.start[static_cast<std::size_t>(rv)] == approx(2.0));
  CHECK(s.start[static_cast<std::size_t>(c2)] == approx(2.5));
  CHECK(s.start[static_cast<std::size_t>(r2)] == approx(3.5));  // = start of s2
  CHECK(s.start[static_cast<std::size_t>(c2b)] == approx(3.75));
  CHECK(s.iteration_s == approx(4.75));
}
