#include "sim/select/nccl_search.hpp"

#include <algorithm>
#include <cmath>
#include <span>

#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack::select {
namespace {

// The per-channel speeds NCCL tries, fastest first (src/graph/search.cc at v2.28.9-1, = v2.27.7-1).
constexpr double kIntraSm80[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
constexpr double kInterSm80[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                 7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr double kIntraSm90[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
constexpr double kInterSm90[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr double kIntraSm100[] = {90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
constexpr double kInterSm100[] = {96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0,
                                  17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
// 2.26 (src/graph/search.cc at v2.26.2-1) had neither 18 inside a node nor 96 across, and 45 for 45.1.
constexpr double kIntraSm100v226[] = {90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0};
constexpr double kInterSm100v226[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                      15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
// Later releases add Blackwell speeds: 45 inside a node from 2.29.3 (16 channels fill an NVLink5
// GPU's 18 x 40.1 GB/s), 80 across nodes from 2.29.7 and 86 from 2.30 (800 Gb/s NICs). Ampere and
// Hopper keep theirs.
constexpr double kIntraSm100v229[] = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
constexpr double kInterSm100v2297[] = {96.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0,
                                       17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr double kInterSm100v230[] = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                      20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};

constexpr int kMaxChannels = 64;  // MAXCHANNELS (src/include/device.h)

std::span<const double> speeds(int sm, bool inter, NcclVersion version) {
  if (sm >= 100 && inter) {
    if (version >= NcclVersion::v2_30_7) return kInterSm100v230;
    if (version >= NcclVersion::v2_29_7) return kInterSm100v2297;
    if (version <= NcclVersion::v2_26_2) return kInterSm100v226;
    return kInterSm100;
  }
  if (sm >= 100) {
    if (version >= NcclVersion::v2_29_3) return kIntraSm100v229;
    if (version <= NcclVersion::v2_26_2) return kIntraSm100v226;
    return kIntraSm100;
  }
  if (sm >= 90) return inter ? std::span<const double>(kInterSm90) : std::span<const double>(kIntraSm90);
  return inter ? std::span<const double>(kInterSm80) : std::span<const double>(kIntraSm80);
}

// NCCL subtracts each channel's speed from every link it crosses and stops when one would go
// negative; float sums of a few terms, so a small tolerance keeps 6 x 40 on 240 GB/s exact.
int fits(double capacity, double speed) {
  return static_cast<int>(std::floor(capacity / speed + 1e-6));
}

struct Graph {
  int n = 0;
  double intra = 0, inter = 0;
};

class Search {
 public:
  Search(const SearchNode& node, bool ring, int max_channels)
      : node_(node),
        ring_(ring),
        max_channels_(max_channels),
        speeds_(speeds(node.sm, node.nets > 0, node.version)) {
    // system->totalBw: the GPU's NVLink total; maxBw: the best GPU -> GPU (one node) or GPU -> NET path.
    total_ = node.nvlink_GBps;
    max_ = node.nets > 0 ? node.net_path_GBps : node.nvlink_GBps;
    // Trees need not close the loop to the NIC they start from: NCCL raises the target by ndevs/(ndevs-1).
    if (!ring && node.nets > 1) total_ *= node.nets / (node.nets - 1.0);
  }

  Graph run() {
    // Pass 1: the fastest speed the paths allow, then slower ones while they can still be at least
    // half as good, keeping the graph with the most channels x speed (ties keep the first: fewer hops).
    std::size_t i = 0;
    while ((speeds_[i] > max_ || speeds_[i] > total_) && i + 1 < speeds_.size()) ++i;
    Graph best;
    for (;;) {
      const int n = channels_at(speeds_[i], speeds_[i]);
      if (n >= 1 && n * speeds_[i] > best.n * best.inter) best = {n, speeds_[i], speeds_[i]};
      if (n == max_channels_) break;                        // "PERFECT": as many channels as allowed
      if (best.n * best.inter >= node_.nvlink_GBps) break;  // graph->nChannels*bwInter >= system->totalBw
      if (i + 1 < speeds_.size() && (best.n == 0 || speeds_[i + 1] / best.inter > .49)) {
        ++i;
        continue;
      }
      break;
    }
    if (best.n == 0) return best;
    duplicate(best);
    // Pass 2: with the channels found, try faster speeds (rings), or a faster intra-node speed up to
    // twice the network's (trees).
    std::size_t j = 0;
    while (speeds_[j] > best.inter && j + 1 < speeds_.size()) ++j;
    while (j > 0) {
      const double s = speeds_[--j];
      if (ring_) {
        if (channels_at(s, s) >= best.n) best.intra = best.inter = s;
      } else if (best.intra < 2 * best.inter && s > best.intra) {
        if (channels_at(s, best.inter) >= best.n) best.intra = s;
      }
    }
    return best;
  }

 private:
  // How many channels fit at these speeds. On one node a channel crosses every GPU's NVLink once
  // out and once in. Across nodes it enters the node by a NIC and leaves by one (PCIe), so the GPU
  // it leaves from sends nothing over NVLink: with n channels spread over g GPUs a GPU carries
  // n - n/g of them. A NIC carries as many channels as its path bandwidth allows.
  int channels_at(double intra, double inter) const {
    const int g = std::max(1, node_.gpus);
    int n = 0;
    while (n < max_channels_) {
      const int next = n + 1;
      const int on_nvlink = node_.nets > 0 ? next - next / g : next;
      if (g > 1 && fits(node_.nvlink_GBps, intra) < on_nvlink) break;
      if (node_.nets > 0 && next > node_.nets * fits(node_.net_path_GBps, inter)) break;
      n = next;
    }
    return n;
  }

  // ncclTopoDupChannels: fast graphs get twice the channels at half the speed (not on Hopper and
  // newer between 25 and 50 GB/s with more than 4 channels).
  void duplicate(Graph& g) const {
    if (g.intra < 25.0) return;
    if (node_.sm > 80 && g.intra < 50.0 && g.n > 4) return;
    const int dup = std::min(g.n * 2, max_channels_);
    const double div = std::ceil(static_cast<double>(dup) / g.n);
    g.intra /= div;
    g.inter /= div;
    g.n = dup;
  }

  const SearchNode& node_;
  bool ring_;
  int max_channels_;
  std::span<const double> speeds_;
  double total_ = 0, max_ = 0;
};

// The NVLS graph (ncclTopoSearchTryNvls): a channel per head GPU; the head's links to the NVSwitch
// carry the channel twice, every other GPU's once, so with n heads a GPU's NVLink carries n + 1
// channels. On one node every GPU must be a head (minChannels = maxChannels); across nodes each
// head also drives a NIC, and pass 2 raises the network speed while the NIC path allows it.
Graph search_nvls(const SearchNode& node) {
  const bool inter = node.nets > 0;
  const std::span<const double> sp = speeds(node.sm, inter, node.version);
  const int max_heads =
      std::min({32, std::max(1, node.gpus), inter ? node.nets : node.gpus});  // NCCL_MAX_NVLS_ARITY
  const int min_heads = inter ? 1 : max_heads;
  const double max_bw = inter ? node.net_path_GBps : node.nvlink_GBps;
  const auto heads_at = [&](double intra, double net) {
    if (inter && net > node.net_path_GBps * (1 + 1e-6)) return 0;
    int n = 0;
    while (n < max_heads && (n + 2) * intra <= node.nvlink_GBps * (1 + 1e-6)) ++n;
    return n >= min_heads ? n : 0;
  };
  std::size_t i = 0;
  while ((sp[i] > max_bw || sp[i] > node.nvlink_GBps) && i + 1 < sp.size()) ++i;
  Graph best;
  for (;;) {
    const int n = heads_at(sp[i], sp[i]);
    // More heads is better, then more heads x network speed.
    if (n > best.n || (n >= 1 && n * sp[i] > best.n * best.inter)) best = {n, sp[i], sp[i]};
    if (best.n >= 1 && best.n * best.inter >= node.nvlink_GBps) break;
    if (i + 1 < sp.size() && (best.n == 0 || sp[i + 1] / best.inter > .49)) {
      ++i;
      continue;
    }
    break;
  }
  if (best.n == 0) return best;
  // Pass 2: the same heads with a faster network speed, up to twice the NVLink speed.
  std::size_t j = 0;
  while (sp[j] > best.inter && j + 1 < sp.size()) ++j;
  while (j > 0 && best.inter < 2 * best.intra) {
    const double s = sp[--j];
    if (heads_at(best.intra, s) < best.n) break;
    best.inter = s;
  }
  return best;
}

}  // namespace

double nccl_nvlink_link_GBps(int sm) {
  return sm >= 100 ? 40.1 : (sm >= 90 ? 20.6 : 20.0);
}
int nvlink_links(int sm, double line_Bps) {
  const double link_line_GBps = sm >= 100 ? 50.0 : 25.0;
  return std::max(1, static_cast<int>(std::lround(line_Bps / 1e9 / link_line_GBps)));
}

std::string describe_comm(const CommShape& shape, const NcclEnv& env) {
  const int bounded = bound_by_ctas(shape.n_channels, env);
  std::string limits;
  if (bounded != shape.n_channels) {
    std::string knobs;
    if (env.min_ctas > 0) knobs += fmt::format("NCCL_MIN_CTAS={}", env.min_ctas);
    if (env.max_ctas > 0) knobs += fmt::format("{}NCCL_MAX_CTAS={}", knobs.empty() ? "" : " ", env.max_ctas);
    limits = fmt::format("; {} before {}", shape.n_channels, knobs);
  }
  std::string out = fmt::format("{} coll channels (ring graph {} x {:g} GB/s{})", bounded,
                                shape.ring.n_channels, shape.ring.bw_intra, limits);
  if (shape.nvls_support) out += fmt::format(", {} nvls channels", shape.nvls_channels);
  // NCCL prints at init that it disables CollNet (below NCCL_COLLNET_NODE_THRESHOLD nodes) and runs on.
  if (!shape.collnet_off_reason.empty())
    out += fmt::format("; --collnet on ignored: {}", shape.collnet_off_reason);
  return out;
}

SearchedGraphs search_nvswitch_node(const SearchNode& node) {
  if (!(node.nvlink_GBps > 0))
    throw InputError(fmt::format(
        "NCCL channel search: expected a positive NVLink bandwidth per GPU, got {} GB/s", node.nvlink_GBps));
  if (node.nets < 0 || (node.nets > 0 && !(node.net_path_GBps > 0)))
    throw InputError(
        fmt::format("NCCL channel search: expected NICs with a positive path bandwidth, got {} NICs at "
                    "{} GB/s",
                    node.nets, node.net_path_GBps));
  const auto to_params = [&](const Graph& g, int pattern) {
    return GraphParams{g.n, g.intra, g.inter, PathType::nvl, PathType::pix, 0, true, pattern};
  };
  SearchedGraphs out;
  // init.cc: the ring searches up to MAXCHANNELS/2 channels, the tree up to the ring's count.
  const Graph ring = Search(node, true, kMaxChannels / 2).run();
  const Graph tree = Search(node, false, std::max(1, ring.n)).run();
  out.ring = to_params(ring, 4);
  // Balanced trees across nodes; NCCL_TOPO_PATTERN_TREE on one node and for one GPU per node
  // (ncclTopoCompute: "if (ngpus == 1) ... pattern = NCCL_TOPO_PATTERN_TREE"), which the tuner
  // prices at 0.85.
  out.tree = to_params(tree, node.nets > 0 && node.gpus > 1 ? 1 : 3);
  // ncclTopoPostset: the channels of min(ring, tree) are duplicated once more; on Hopper and newer a
  // multi-node ring with fast channels is doubled again below 16 ("4 compute channels per search channel").
  int comm = std::min(kMaxChannels, 2 * std::max(1, std::min(ring.n, tree.n)));
  if (node.sm >= 90 && node.nets > 0 && ring.intra > 45.0 && comm < 16)
    comm = std::min(kMaxChannels, 2 * comm);
  out.comm_channels = comm;
  out.nvls = to_params(search_nvls(node), 5);
  return out;
}

}  // namespace commstack::select
