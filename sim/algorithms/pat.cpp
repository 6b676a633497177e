// PAT (Parallel Aggregated Trees), NCCL's all-gather and reduce-scatter at one GPU per node
// (src/include/collectives.h, PatAGAlgorithm / PatRSAlgorithm; NCCL 2.23+). For an all-gather each
// rank's chunk is broadcast down a binomial tree of the ranks in order, rooted at its owner: at step
// t (of L = log2 of n rounded up to a power of two, P) every rank holding it passes it on to the rank
// P / 2^(t+1) further on, skipping ranks past n (NCCL's "s >= nranks: skip"). The n trees are shifted
// copies of each other, so at step t every rank sends the chunks of all the trees it holds at that
// step in one aggregated transfer to one peer: c_t chunks, c_t = the number of multiples o of
// P / 2^t with o + P / 2^(t+1) < n, 1, 2, 4, ... for a power of two, n - 1 in all. The far peers get
// one chunk and the near ones half of the data, which is what keeps PAT's traffic local on a fat
// tree where Bruck's algorithm sends its largest steps farthest. Reduce-scatter is the transpose: the
// same transfers in the reverse order and direction, partial sums instead of copies.
//
// A rank's transfer at step t waits for everything it received at earlier steps (the chunks it
// forwards or adds to). Each aggregated step is one transfer (NCCL sizes its aggregation to its
// buffer; a call larger than the buffer loops, which only overlaps the steps' latencies), so the
// chunk, step and edge levels are the same flows: n L of them, each rank one per step.
#include <algorithm>
#include <vector>

#include "sim/algorithms/detail.hpp"

namespace commstack::sim::detail {

PatSchedule pat_schedule(int n) {
  PatSchedule s;
  int P = 1;
  while (P < n) P *= 2;
  for (int stride = P; stride > 1; stride /= 2) {
    const int d = stride / 2;
    // Multiples of `stride` (the tree offsets holding a chunk) that have a rank d further on.
    const int chunks = n > d ? (n - d + stride - 1) / stride : 0;
    if (chunks > 0) s.steps.push_back(PatStep{d, chunks});
  }
  return s;
}

void add_pat(FlowGraph& graph, const CollectiveSpec& spec) {
  const auto n = static_cast<int>(spec.ranks.size());
  if (n < 2) return;
  const PatSchedule sched = pat_schedule(n);
  const bool gather = spec.op == CollectiveOp::allgather;
  const auto L = static_cast<int>(sched.steps.size());
  const double chunk = spec.bytes / n / spec.channels;  // one rank's chunk of one channel
  for (int c = 0; c < spec.channels; ++c) {
    // into[x][u]: the flow that arrives at rank index x at step u.
    std::vector<std::vector<int>> into(static_cast<std::size_t>(n),
                                       std::vector<int>(static_cast<std::size_t>(L), -1));
    for (int u = 0; u < L; ++u) {
      // All-gather runs the tree's steps in order (far peers first); reduce-scatter in reverse,
      // each transfer going the other way.
      const PatStep& st = sched.steps[static_cast<std::size_t>(gather ? u : L - 1 - u)];
      for (int x = 0; x < n; ++x) {
        const int peer = gather ? (x + st.distance) % n : (x - st.distance + n) % n;
        Flow f;
        f.src = spec.ranks[static_cast<std::size_t>(x)];
        f.dst = spec.ranks[static_cast<std::size_t>(peer)];
        f.bytes = st.chunks * chunk;
        f.extra_latency_s = spec.step_overhead_s;
        f.group = spec.group;
        const int id = graph.add_flow(f);
        into[static_cast<std::size_t>(peer)][static_cast<std::size_t>(u)] = id;
        for (int earlier = 0; earlier < u; ++earlier)
          graph.add_dependency(into[static_cast<std::size_t>(x)][static_cast<std::size_t>(earlier)], id);
      }
    }
  }
}

}  // namespace commstack::sim::detail
