#pragma once
// Internal to sim/algorithms: the step level's pipeline of a ring or chain collective, run outside
// SimGrid so that the coarse levels (one flow per edge carrying every step or chunk) can end where
// the fine ones do. Each hop's transfer is its busiest link shared equally by the collective's
// flows on it at each instant (processor sharing); every other link and every other collective's
// contention is left to SimGrid, which moves the coarse flows' bytes.
#include <vector>

#include "topologies/topology.hpp"

namespace commstack::sim::detail {

// One hop of a channel: one block's transfer time alone on the hop's busiest link (t0), the flows
// of this collective on that link per direction (share), the latency each block pays after it is
// sent (a), and that link's index among the collective's shared links (-1: no other flow on it).
struct PipeHop {
  double t0 = 0, share = 1, a = 0;
  int link = -1;
};

// The hops of every channel, links numbered in the order the channels first cross them (so that
// sibling groups with the same shape get the same numbers), and each channel's bandwidth bound:
// its slowest hop with every flow on its link active (share x t0).
struct PipeHops {
  std::vector<std::vector<PipeHop>> hops;
  int links = 0;
  std::vector<double> max_t;
};

// paths[c][i]: the route of channel c's hop i. block: bytes per transfer; latency_scale: route
// latencies (plus overhead_s) a block pays (K for a ring step folding K chunk loops).
PipeHops pipeline_hops(const topologies::Topology& topo,
                       const std::vector<std::vector<topologies::Path>>& paths, double block,
                       double latency_scale, double overhead_s);

// Collectives up to this many (hop, block) pairs over all channels get their pipeline run in the
// coarse levels (about 0.35 s per million pairs: a 480-GPU DGX H100 all-reduce on 8 channels).
inline constexpr double kPipelineBudget = 4e6;

enum class PipeShape {
  ring,   // hop i's block s waits for hop i-1's block s-1 (mod n); count = steps
  chain,  // hop i's block k waits for hop i-1's block k; hop 0 waits for nothing; count = chunks
};

// Each hop's end: when its last block has arrived (sent + a), for every channel ([c][i]). Every hop
// sends its first block as soon as it may, the first ring step or chain hop at time 0; a hop sends
// one block at a time. Runs about 0.35 s per million (hop, block) pairs; results are cached for
// sibling groups of the same shape.
std::vector<std::vector<double>> pipeline_hop_ends(const PipeHops& hops, PipeShape shape, int count);

// Each channel's end (latest arrival over its hops) after `mark` blocks and after all `count`, from
// one run (not cached): the slope between the two is a pipeline's cycle once it is steady.
struct PipelineMarks {
  std::vector<double> at_mark, at_count;
};
PipelineMarks pipeline_channel_ends(const PipeHops& hops, PipeShape shape, int count, int mark);

}  // namespace commstack::sim::detail
