#pragma once
// Internal to sim/algorithms: the step level's pipeline of a ring, chain or tree collective, run
// outside SimGrid so that the coarse levels (one flow per edge carrying every step or chunk) can
// end where the fine ones do. Each hop's transfer is its busiest link shared equally by the
// collective's flows on it at each instant (processor sharing), or, for rings, chains and trees whose
// hops cross several shared links, all of them max-min fairly (link_sharing.hpp); every other
// collective's contention is left to SimGrid, which moves the coarse flows' bytes.
#include <vector>

#include "topologies/topology.hpp"

namespace commstack::sim::detail {

// A ring, chain or tree whose hops cross several shared links gets them shared max-min fairly (SimGrid's
// sharing, link_sharing.hpp) up to this many (block, hop in flight or shared link) visits, the
// product bounding each block's solve over every hop in flight and link. Measured at the budget's
// edge: a 1 GiB tree all-reduce on 9 DGX A100 nodes 1.0 s, a 1 GiB NVL72 broadcast 1.4 s (the
// chunk level's 2.0 s). Beyond it, processor sharing of each hop's busiest link (within 0.5% of
// the chunk level at 1 GiB on NVL72, 5 B200 and 7 A100 nodes with one tree per channel).
inline constexpr double kMaxMinBudget = 1e9;
// A ring's chunk loops (PipeHops::loop) solve the sharing far less often per (block, hop) than a
// chain's: the channels' blocks start and end together, one solve an instant for all. Measured at
// about 5e9: 16 DGX H100 nodes, 1 GiB in 70 KiB chunks (15 loops a step), 2.2 s against 1.7 s with
// processor sharing of the busiest link and 25 s at the chunk level; edge level +0.20% against the
// chunk level (processor sharing -2.1%). The same budget for chains took a 16-node 1 GiB broadcast's
// edge level to 16 s.
inline constexpr double kRingLoopsMaxMinBudget = 1e10;

// One hop of a channel: one block's transfer time alone on the hop's busiest link (t0), the flows
// of this collective on that link per direction (share), the latency each block pays after it is
// sent (a), and that link's index among the collective's shared links (-1: no other flow on it).
struct PipeHop {
  double t0 = 0, share = 1, a = 0;
  int link = -1;
  // Every link of the hop that other flows of this collective cross too (index among those links,
  // one block's time alone on it), and the hop's time alone on its other links: what a chain's
  // pipeline shares when its hops cross two equally loaded links with different flows on each.
  struct Use {
    int link;
    double t;
  };
  std::vector<Use> uses;
  double t_alone = 0;
};

// The hops of every channel, links numbered in the order the channels first cross them (so that
// sibling groups with the same shape get the same numbers), and each channel's bandwidth bound:
// its slowest hop with every flow on its link active (share x t0).
struct PipeHops {
  std::vector<std::vector<PipeHop>> hops;
  int links = 0;
  int shared_links = 0;  // links numbered in PipeHop::uses
  // PipeShape::dag: feeds[c][i], the hops of channel c that need block k of hop i before they send
  // their own block k (a chain's next hop; a tree's reduction waits for every child, its broadcast
  // for the parent).
  std::vector<std::vector<std::vector<int>>> feeds;
  // PipeShape::ring: the blocks come in loops of this many steps, as NCCL's chunk loops (every
  // step of chunk loop k, then every step of loop k + 1): a loop's first block waits only for the
  // hop's previous block, not for the predecessor. 0: one loop of all the blocks.
  int loop = 0;
  // The max-min sharing's budget for this run (kMaxMinBudget, or kRingLoopsMaxMinBudget).
  double max_min_budget = kMaxMinBudget;
  // Whether a hop crosses two or more links that other flows of the collective share.
  bool multi_link() const {
    for (const auto& channel : hops)
      for (const auto& h : channel)
        if (h.uses.size() > 1) return true;
    return false;
  }
  std::vector<double> max_t;
};

// paths[c][i]: the route of channel c's hop i. block: bytes per transfer; each block pays its
// route's latency plus overhead_s after it is sent.
PipeHops pipeline_hops(const topologies::Topology& topo,
                       const std::vector<std::vector<topologies::Path>>& paths, double block,
                       double overhead_s);

// Collectives up to this many (hop, block) pairs over all channels get their pipeline run in the
// coarse levels (about 0.35 s per million pairs: a 480-GPU DGX H100 all-reduce on 8 channels).
inline constexpr double kPipelineBudget = 4e6;

// Flows on one link whose finish times differ by less than this fraction of a transfer leave
// together: flows of channels in lock-step come in within a few ulps, and processor sharing would
// let the first one leave first and come back earlier at every step (3x the gap per step with 4
// flows), an instability of the arithmetic; SimGrid ends actions within its precision together.
inline constexpr double kSameFinish = 1e-9;

enum class PipeShape {
  ring,  // hop i's block s waits for hop i-1's block s-1 (mod n), except a loop's first; count = steps
  // hop i's block k waits for block k of each hop that feeds it (PipeHops::feeds: a chain's hop i
  // feeds hop i+1, a tree's reduction waits for every child); count = chunks
  dag,
};

// Each hop's end: when its last block has arrived (sent + a), for every channel ([c][i]). Every hop
// sends its first block as soon as it may, the first ring step or unfed dag hop at time 0; a hop sends
// one block at a time. Runs about 0.35 s per million (hop, block) pairs; results are cached for
// sibling groups of the same shape.
std::vector<std::vector<double>> pipeline_hop_ends(const PipeHops& hops, PipeShape shape, int count);

// Everything about the hops that a pipeline run depends on (link numbers, loops, feeds, each hop's
// times, sharing and latency): equal keys, equal runs. For caches of results derived from runs.
std::vector<double> pipeline_key(const PipeHops& hops);

// A dag's hop ends for channel c beyond the pipeline budget: the longest path to each hop's first
// block's arrival over uncontended block times (t0 + a), plus K - 1 of the channel's slowest shared
// block time (max_t), the rate its busiest link lets the pipeline run at once it is full.
std::vector<double> dag_hop_ends_estimate(const PipeHops& hops, std::size_t c, int K);

// Each channel's end (latest arrival over its hops) after `mark` blocks and after all `count`, from
// one run (not cached): the slope between the two is a pipeline's cycle once it is steady.
struct PipelineMarks {
  std::vector<double> at_mark, at_count;
};
PipelineMarks pipeline_channel_ends(const PipeHops& hops, PipeShape shape, int count, int mark);

}  // namespace commstack::sim::detail
