#include "sim/select/nccl_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack::select {

namespace {

constexpr int kWarp = 32;
constexpr int kMaxNThreads = 640;        // NCCL_MAX_NTHREADS
constexpr int kSimpleMaxNThreads = 512;  // NCCL_SIMPLE_MAX_NTHREADS
constexpr int kLLMaxNThreads = 512;      // NCCL_LL_MAX_NTHREADS
constexpr int kLL128MaxNThreads = 640;   // NCCL_LL128_MAX_NTHREADS
constexpr double kPciBw = 12.0;          // PCI_BW, Gen3 x16 (topo.h)
constexpr int kMaxDirectArity = 7;
constexpr int kMaxNvlsArity = 32;

// comm->localRanks: the shape's, else the ranks of the fullest node.
int local_ranks(const CommShape& s) {
  return s.local_ranks > 0 ? s.local_ranks : (s.n_ranks + s.n_nodes - 1) / s.n_nodes;
}

int get_nthreads(int env, int min, int max, int def) {
  if (env <= 0) return def;
  if (env % kWarp != 0) return max;
  return std::clamp(env, min, max);
}

int log2i(std::uint64_t n) {
  int l = 0;
  while (n >>= 1) ++l;
  return l;
}

const GraphParams& graph_for(const CommShape& s, Algo a) {
  switch (a) {
    case Algo::tree: return s.tree;
    case Algo::ring: return s.ring;
    case Algo::collnet_direct: return s.collnet_direct;
    case Algo::collnet_chain: return s.collnet_chain;
    case Algo::nvls:
    case Algo::nvls_tree: return s.nvls;
    case Algo::pat: return s.tree;
  }
  return s.ring;
}

void check_shape(const CommShape& s) {
  if (s.n_ranks < 1) throw InputError(fmt::format("communicator: nRanks must be >= 1, got {}", s.n_ranks));
  if (s.n_nodes < 1 || s.n_nodes > s.n_ranks)
    throw InputError(fmt::format("communicator: nNodes must be in 1..nRanks ({}), got {}", s.n_ranks, s.n_nodes));
  if (s.min_sm < 30 || s.max_sm < s.min_sm || s.max_sm > 1000)
    throw InputError(fmt::format("communicator: GPU SM versions must satisfy 30 <= min ({}) <= max ({})", s.min_sm, s.max_sm));
  for (Algo a : kAllAlgos) {
    const GraphParams& g = graph_for(s, a);
    if (g.n_channels < 0 || g.n_channels > 64 || !(g.bw_intra >= 0) || !(g.bw_inter >= 0) || !(g.latency_inter_us >= 0) ||
        !std::isfinite(g.bw_intra) || !std::isfinite(g.bw_inter))
      throw InputError(fmt::format("communicator: {} graph: channels must be 0..64 and bandwidths/latency finite and >= 0", to_string(a)));
  }
  if (s.ring.n_channels < 1) throw InputError("communicator: ring graph needs at least 1 channel");
}

bool pat_enabled(const CommShape& s, const NcclEnv& env) {
  if (s.min_sm < 60) return false;
  if (env.pat_enable != 2) return env.pat_enable != 0;
  if (s.n_nodes != s.n_ranks) return false;
  return s.net_device_host;
}

double net_overhead(const CommShape& s, const NcclEnv& env) {
  if (env.net_overhead_ns) return *env.net_overhead_ns * .001;
  if (s.cpu_arch == CpuArch::x86 && s.cpu_vendor == CpuVendor::intel) return 1.0;
  if (s.cpu_arch == CpuArch::x86 && s.cpu_vendor == CpuVendor::amd) return 2.0;
  return 1.0;
}

}  // namespace

double ring_net_overhead_us(const CommShape& s, const NcclEnv& env, Proto proto) {
  if (s.n_nodes <= 1) return 0;
  return net_overhead(s, env) * (proto == Proto::simple ? 3 : 1);
}

namespace {

// NCCL's per-protocol thread counts and thresholds, and the communicator's channels after
// NCCL_MIN/MAX_CTAS (src/graph/tuning.cc, graph/connect.cc).
void thread_tables(const CommShape& s, const NcclEnv& env, TuneTables& t) {
  const int simple_default = (s.ring.bw_intra * s.ring.n_channels <= kPciBw) ? 256 : kSimpleMaxNThreads;
  t.max_threads[idx(Algo::ring)][idx(Proto::simple)] = get_nthreads(env.nthreads, 2 * kWarp, kSimpleMaxNThreads, simple_default);
  t.max_threads[idx(Algo::tree)][idx(Proto::simple)] = get_nthreads(env.nthreads, 2 * kWarp, kSimpleMaxNThreads, kSimpleMaxNThreads);
  for (Algo a : {Algo::collnet_direct, Algo::collnet_chain, Algo::nvls, Algo::nvls_tree})
    t.max_threads[idx(a)][idx(Proto::simple)] = kMaxNThreads;
  for (Algo a : {Algo::ring, Algo::tree}) {
    t.max_threads[idx(a)][idx(Proto::ll)] = get_nthreads(env.nthreads, 2 * kWarp, kLLMaxNThreads, kLLMaxNThreads);
    t.max_threads[idx(a)][idx(Proto::ll128)] =
        get_nthreads(env.ll128_nthreads, kLL128MaxNThreads / 4, kLL128MaxNThreads, kLL128MaxNThreads);
  }

  // Channels after NCCL_MIN/MAX_CTAS (graph/connect.cc: min with maxCTAs, then copy up to minCTAs).
  int nc = s.n_channels > 0 ? s.n_channels : std::max(1, std::min(s.ring.n_channels, s.tree.n_channels > 0 ? s.tree.n_channels : s.ring.n_channels));
  t.comm_channels = std::min(bound_by_ctas(nc, env), 64);
  t.nvls_channels = s.nvls_channels > 0 ? s.nvls_channels : s.nvls.n_channels;
  // Up to 2.27 (graph/connect.cc ncclTopoPostset) the communicator's channels are raised to the NVLS
  // channels where fewer; Ring and Tree calls start from them (topoGetAlgoInfo reads
  // comm->nChannels) and so do send/receive (p2pnChannels). 2.28 dropped the raise.
  if (t.version <= NcclVersion::v2_27_7 && s.nvls_support && t.nvls_channels > t.comm_channels)
    t.comm_channels = std::min(t.nvls_channels, 64);

  for (int a = 0; a < kNumAlgos; ++a) {
    t.thread_threshold[a][idx(Proto::ll)] = 8;
    t.thread_threshold[a][idx(Proto::ll128)] = 8;
    t.thread_threshold[a][idx(Proto::simple)] = 64;
  }
  t.thread_threshold[idx(Algo::ring)][idx(Proto::ll)] *= s.n_ranks;
  t.thread_threshold[idx(Algo::collnet_direct)][idx(Proto::simple)] = 512;
  t.thread_threshold[idx(Algo::collnet_chain)][idx(Proto::simple)] = 512;
}

// What the bandwidth and latency formulas read for one communicator: NCCL's constants for its GPU
// generation and node count, and the hardware latency table.
struct TuneContext {
  const CommShape& s;
  const NcclEnv& env;
  const TunerConstants& k;
  NcclVersion version;
  int cc = 0;  // GPU architecture index
  double ll_max_bw = 0, per_ch_max_tree_bw = 0, per_ch_max_ring_ll128_bw = 0, per_ch_max_tree_ll128_bw = 0,
         per_ch_max_nvls_tree_bw = 0;
  double hw_lat[kNumHw][kNumAlgos][kNumProtos] = {};
  float ppn = 1;

  TuneContext(const CommShape& shape, const NcclEnv& e, NcclVersion v)
      : s(shape), env(e), k(tuner_constants(v)), version(v), cc(arch_index(shape.min_sm)) {
    const int n_nodes = s.n_nodes;
    const int index2 = n_nodes <= 2 ? n_nodes - 1 : 2;
    const int index1 = n_nodes == 1                                                           ? cc
                       : (s.cpu_vendor == CpuVendor::amd || s.cpu_vendor == CpuVendor::mixed) ? 1
                                                                                              : 0;
    ll_max_bw = k.ll_max_bw[index1][index2];
    per_ch_max_tree_bw = k.per_ch_max_tree_bw[cc][index2];
    per_ch_max_ring_ll128_bw = k.per_ch_max_ring_ll128_bw[cc][index2];
    per_ch_max_tree_ll128_bw = k.per_ch_max_tree_ll128_bw[cc][index2];
    per_ch_max_nvls_tree_bw = k.per_ch_max_nvls_tree_bw[cc][index2];
    for (int h = 0; h < kNumHw; ++h)
      for (int a = 0; a < kNumAlgos; ++a)
        for (int p = 0; p < kNumProtos; ++p) hw_lat[h][a][p] = k.hw_latency_us[h][a][p];
    if (s.cpu_arch == CpuArch::power)  // NCCL de-penalises Tree/Simple on POWER
      hw_lat[idx(Hw::pci)][idx(Algo::tree)][idx(Proto::simple)] =
          hw_lat[idx(Hw::pci)][idx(Algo::ring)][idx(Proto::simple)];
    ppn = static_cast<float>(s.n_ranks) / static_cast<float>(n_nodes);
  }
};

// The (function, algorithm, protocol) triples NCCL's model computes.
bool modelled(const TuneContext& c, Func f, Algo algo, Proto proto) {
  if ((f == Func::broadcast || f == Func::reduce) && algo != Algo::ring) return false;
  if ((f == Func::reduce_scatter || f == Func::all_gather) && algo != Algo::pat && algo != Algo::ring &&
      algo != Algo::nvls && algo != Algo::collnet_direct)
    return false;
  if (f == Func::all_reduce && algo == Algo::pat) return false;
  if ((algo == Algo::nvls || algo == Algo::nvls_tree) && proto != Proto::simple) return false;
  if ((f == Func::reduce_scatter || f == Func::all_gather) && algo == Algo::pat &&
      (proto != Proto::simple || !pat_enabled(c.s, c.env)))
    return false;
  return true;
}

// NCCL's bus bandwidth for one triple, GB/s (ncclTopoTuneModel); nullopt where an NVLS graph has
// fewer than 2 channels (NCCL leaves the entry out).
std::optional<float> bus_bandwidth(const TuneContext& c, Func f, Algo algo, Proto proto, int nsteps) {
  const CommShape& s = c.s;
  const TunerConstants& k = c.k;
  const GraphParams& g = graph_for(s, algo);
  const int n_nodes = s.n_nodes, n_ranks = s.n_ranks, cc = c.cc;
  const float ppn = c.ppn;
  const bool collnet = algo == Algo::collnet_direct || algo == Algo::collnet_chain;
  float bw = static_cast<float>(n_nodes <= 2 || collnet ? g.bw_intra : g.bw_inter);
  const bool nvls_pre_2_28 = c.version <= NcclVersion::v2_27_7;
  if (nvls_pre_2_28 && algo == Algo::nvls) {
    // 2.26 and 2.27: the graph's speeds; 2.27 scales all-gather / reduce-scatter to the other
    // ppn - 1 GPUs' share and 0.9 of the network.
    bw = static_cast<float>(std::min(g.bw_intra, g.bw_inter));
    if (c.version == NcclVersion::v2_27_7 && f != Func::all_reduce)
      bw = std::min(static_cast<float>(g.bw_intra) * (ppn - 1.0f) / ppn,
                    static_cast<float>(g.bw_inter) * 0.9f);
  } else if (nvls_pre_2_28 && algo == Algo::nvls_tree) {
    bw = static_cast<float>(std::min(g.bw_intra, n_nodes <= 2 ? g.bw_inter : g.bw_inter / 2));
  } else if (algo == Algo::nvls || algo == Algo::nvls_tree) {
    if (g.n_channels < 2) return std::nullopt;
    float intra = static_cast<float>(g.bw_intra * k.nvls_efficiency[cc] * (g.n_channels - 1) / g.n_channels);
    if (f == Func::all_reduce)
      intra *= 2.0f;
    else
      intra *= (ppn - 1) / ppn;
    float inter = static_cast<float>(g.bw_inter * ((n_nodes <= 2 && algo == Algo::nvls_tree) ? 2 : 1));
    bw = std::min({intra, inter,
                   algo == Algo::nvls_tree ? static_cast<float>(c.per_ch_max_nvls_tree_bw)
                                           : std::numeric_limits<float>::max()});
  }
  float bus = static_cast<float>(g.n_channels) * bw;
  if (algo == Algo::ring && proto == Proto::ll) bus = static_cast<float>(std::min(c.ll_max_bw, bus * .5));
  if (algo == Algo::ring && proto == Proto::ll128)
    bus = static_cast<float>(std::min(bus * 0.92, g.n_channels * c.per_ch_max_ring_ll128_bw));
  if (algo == Algo::tree && f == Func::all_reduce)
    bus = static_cast<float>(std::min(bus * .92, g.n_channels * c.per_ch_max_tree_bw));
  if (algo == Algo::tree && proto == Proto::ll)
    bus = static_cast<float>(std::min(bus * 1.0 / 3.8, c.ll_max_bw));
  if (algo == Algo::tree && proto == Proto::ll128)
    bus = static_cast<float>(std::min(bus * (n_nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                                      g.n_channels * c.per_ch_max_tree_ll128_bw));
  if (algo == Algo::tree && s.tree.pattern == 3) bus *= .85f;  // NCCL_TOPO_PATTERN_TREE
  if (algo == Algo::pat) bus *= .75f;
  if (collnet && proto != Proto::simple) bus = 0;
  if (algo == Algo::collnet_direct && proto == Proto::simple) {
    if ((f == Func::all_gather || f == Func::reduce_scatter) && c.version == NcclVersion::v2_26_2) {
      // 2.26: one GPU per NIC and a corrective ratio interpolated between 1 and 8 GPUs per node.
      bus = ppn * bw;
      if (n_nodes > 1 && (!s.collnet_ag_rs || ppn > static_cast<float>(s.collnet_heads))) bus = 0;
      const float w = (ppn - 1) / (8 - 1);
      bus *= w * 0.85f + (1 - w) * 0.95f;
    } else if (f == Func::all_gather || f == Func::reduce_scatter) {
      bus = static_cast<float>(ppn * std::min(g.bw_intra, g.bw_inter * 0.9));
    } else {
      float factor = ppn / static_cast<float>(std::max(1, g.n_channels));
      factor -= (factor - 1) / 2;
      bus /= factor;
      if (s.min_sm >= 90) bus *= .85f;
    }
  }
  if (c.version >= NcclVersion::v2_27_7 && (algo == Algo::nvls || algo == Algo::collnet_direct) &&
      proto == Proto::simple && (f == Func::all_gather || f == Func::reduce_scatter) && n_nodes > 1) {
    if (!s.collnet_support || !s.collnet_ag_rs || local_ranks(s) > s.collnet_heads) bus = 0;
  }
  if (!(algo != Algo::ring && (f == Func::all_gather || f == Func::reduce_scatter))) {
    float ratio = .5f;
    if (algo == Algo::ring) ratio = static_cast<float>(1.0 * n_ranks / nsteps);
    if (algo == Algo::nvls || algo == Algo::nvls_tree)
      ratio = nvls_pre_2_28 ? 5.0f / 6.0f : static_cast<float>(1.0 * n_ranks / nsteps);
    bus *= ratio;
  }
  return bus;
}

// NCCL's latency for one triple, us (ncclTopoTuneModel).
float latency(const TuneContext& c, Func f, Algo algo, Proto proto, int nsteps) {
  const CommShape& s = c.s;
  const GraphParams& g = graph_for(s, algo);
  const int n_nodes = s.n_nodes, n_ranks = s.n_ranks;
  const int a = idx(algo), p = idx(proto);
  const int intra_hw = g.type_intra == PathType::nvl ? idx(Hw::nvlink) : idx(Hw::pci);
  const int hw = n_nodes == 1 ? intra_hw : idx(Hw::net);
  float lat = static_cast<float>(c.k.base_latency_us[a][p]);
  float intra_lat = static_cast<float>(c.hw_lat[intra_hw][a][p]);
  float inter_lat = static_cast<float>(c.ppn == 1 ? c.hw_lat[idx(Hw::net)][idx(Algo::tree)][p]
                                                  : c.hw_lat[idx(Hw::net)][a][p]);
  inter_lat += static_cast<float>(g.latency_inter_us);
  if (proto == Proto::simple) inter_lat += static_cast<float>(g.latency_inter_us);
  const int ppn_i = n_ranks / n_nodes;
  if (algo == Algo::ring) {
    float l = static_cast<float>(c.hw_lat[hw][a][p]);
    if (f == Func::reduce || f == Func::broadcast) {
      if (g.same_channels) {
        lat += l;
      } else {
        if (proto == Proto::simple) l = static_cast<float>(c.hw_lat[hw][idx(Algo::tree)][p]);
        lat += static_cast<float>(nsteps) * l;
      }
    } else {
      float overhead = 0;
      if (n_nodes > 1) {
        overhead = static_cast<float>(net_overhead(s, c.env));
        if (proto == Proto::simple) overhead *= 3;
      }
      intra_lat = std::max(intra_lat, overhead);
      int inter_steps = n_nodes == 1 ? 0 : f == Func::all_reduce ? 2 * (n_nodes - 1) : n_nodes - 1;
      lat +=
          static_cast<float>(nsteps - inter_steps) * intra_lat + static_cast<float>(inter_steps) * inter_lat;
    }
  } else if (algo == Algo::tree) {
    if (f == Func::all_reduce)
      lat += 2 * (static_cast<float>(ppn_i - 1) * intra_lat +
                  static_cast<float>(log2i(static_cast<std::uint64_t>(n_nodes))) * inter_lat);
  } else if (algo == Algo::collnet_direct) {
    lat +=
        2 * (static_cast<float>(std::min(1, ppn_i - 1)) * intra_lat + static_cast<float>(ppn_i - 1) * 0.4f) +
        inter_lat;
  } else if (algo == Algo::collnet_chain) {
    lat += 2 * static_cast<float>(ppn_i - 1) * intra_lat + inter_lat;
  } else if (algo == Algo::nvls) {
    lat = intra_lat;
    if (n_nodes > 1) lat += inter_lat;
  } else if (algo == Algo::nvls_tree) {
    lat += intra_lat + 2 * static_cast<float>(log2i(static_cast<std::uint64_t>(n_nodes))) * inter_lat;
  } else if (algo == Algo::pat) {
    if (f == Func::all_gather || f == Func::reduce_scatter)
      lat += static_cast<float>(log2i(static_cast<std::uint64_t>(n_nodes))) * (inter_lat / 3.5f) +
             static_cast<float>(n_ranks) * 2.8f;
  }
  return lat;
}

// Enable flags: the user's NCCL_ALGO / NCCL_PROTO lists, then NCCL's own disables, then LL128's
// default rule; a disabled entry's bandwidth becomes 0.
void apply_enables(const CommShape& s, const NcclEnv& env, NcclVersion version, const TunerConstants& k,
                   TuneTables& t) {
  const int n_nodes = s.n_nodes, n_ranks = s.n_ranks;
  EnableMatrix m;
  if (env.proto) apply_nccl_list(*env.proto, "NCCL_PROTO", false, m);
  if (env.algo) apply_nccl_list(*env.algo, "NCCL_ALGO", true, m);
  for (Func f : kAllFuncs) {
    for (Algo algo : kAllAlgos) t.user_algo[idx(f)][idx(algo)] = m.algo[idx(f)][idx(algo)] != 0;
    for (Proto proto : kAllProtos) t.user_proto[idx(f)][idx(proto)] = m.proto[idx(f)][idx(proto)] != 0;
  }
  for (Func f : kAllFuncs)
    for (Algo algo : kAllAlgos) {
      bool disable = false;
      if (n_nodes == 1 && algo == Algo::nvls_tree) disable = true;
      if (!s.collnet_support && (algo == Algo::collnet_direct || algo == Algo::collnet_chain || (algo == Algo::nvls && n_nodes > 1)))
        disable = true;
      if (version == NcclVersion::v2_30_7 && s.collnet_support && algo == Algo::collnet_chain && !s.collnet_chain_support) disable = true;
      if (s.nvs_count == 0 && algo == Algo::collnet_direct) disable = true;
      if (disable) m.algo[idx(f)][idx(algo)] = 0;
    }
  for (Func f : kAllFuncs)
    for (Algo algo : kAllAlgos)
      for (Proto proto : kAllProtos) {
        const GraphParams& g = graph_for(s, algo);
        int pe = m.proto[idx(f)][idx(proto)];
        if (pe == 2 && proto == Proto::ll128) {
          pe = 1;
          if (version == NcclVersion::v2_26_2) {
            // 2.26: PXB, or PXN from Hopper on (no NCCL_LL128_C2C), and only on the SMs it was
            // tested on (70, 80, 90, 100, 120).
            pe &= g.type_inter <= PathType::pxb || (s.min_sm >= 90 && g.type_inter <= PathType::pxn);
            pe &= s.min_sm == 70 || s.min_sm == 80 || s.min_sm == 90 || s.min_sm == 100 || s.min_sm == 120;
          } else if (env.ll128_c2c && s.min_sm >= 90) {
            pe &= g.type_inter <= PathType::pxn;
          } else {
            pe &= g.type_inter <= PathType::pxb;
          }
          pe &= g.type_intra <= PathType::nvb;
          pe &= k.ll128_mixed_sm90 ? (s.min_sm == s.max_sm || s.min_sm >= 90) : (s.min_sm == s.max_sm);
          pe &= !(s.min_sm < 70 || (s.min_sm == 90 && s.cudart_version == 11080 && f == Func::all_reduce && algo == Algo::ring && n_ranks == 2));
        }
        if (pe == 0 || m.algo[idx(f)][idx(algo)] == 0) t.bandwidth_GBps[idx(f)][idx(algo)][idx(proto)] = 0;
      }
}

// Why updateCollCostTable leaves `algo` out of this call's cost table (src/enqueue.cc), in the
// user's words; nullptr when it is considered.
const char* ineligible(const TuneTables& t, const CommShape& s, Func f, Algo algo) {
  const bool ag_rs = f == Func::all_gather || f == Func::reduce_scatter;
  const int local = local_ranks(s);
  if (algo == Algo::collnet_direct || algo == Algo::collnet_chain) {
    if (!s.collnet_support)
      return s.collnet_off_reason.empty() ? "needs a CollNet (SHARP) plugin: --collnet on"
                                          : s.collnet_off_reason.c_str();
    // CollNet Chain is limited to 8 GPUs per node like Direct from 2.28 on.
    if ((algo == Algo::collnet_direct || t.version >= NcclVersion::v2_28_9) && local > kMaxDirectArity + 1)
      return "at most 8 GPUs per node";
  }
  if (algo == Algo::nvls || algo == Algo::nvls_tree) {
    if (!s.nvls_support)
      return "no NVLink SHARP here (an NVSwitch of Hopper or later with more than 2 GPUs in the domain, "
             "and --nvls not off)";
    if (algo == Algo::nvls && s.n_nodes > 1 && !s.collnet_support)
      return "spans one NVLink domain (across domains only with CollNet, --collnet on); NVLSTree is its "
             "multi-domain form";
    if (f != Func::all_reduce && local > kMaxNvlsArity)
      return "all-gather / reduce-scatter with at most 32 GPUs per domain";
    // 2.26 runs NVLS all-gather / reduce-scatter on one node of at most 32 ranks only.
    if (t.version == NcclVersion::v2_26_2 && algo == Algo::nvls && ag_rs &&
        (s.n_nodes > 1 || s.n_ranks > kMaxNvlsArity))
      return "all-gather / reduce-scatter on one NVLink domain of at most 32 GPUs only (NCCL 2.26)";
  }
  return nullptr;
}

// Why NCCL would not run `algo` for this call, in the user's words (the algorithm is one the
// user's NCCL_ALGO leaves on): the functions it serves, the eligibility above, the cost-table
// entries NCCL zeroes, the protocols left.
std::string unavailable_reason(const TuneTables& t, const CommShape& s, Func f, Algo algo) {
  const bool ag_rs = f == Func::all_gather || f == Func::reduce_scatter;
  if ((f == Func::broadcast || f == Func::reduce) && algo != Algo::ring)
    return "broadcast and reduce run Ring only";
  if (algo == Algo::tree && f != Func::all_reduce) return "all-reduce only";
  if ((algo == Algo::nvls_tree || algo == Algo::collnet_chain) && f != Func::all_reduce)
    return "all-reduce only";
  if (algo == Algo::pat && !ag_rs) return "all-gather and reduce-scatter only";
  if (algo == Algo::pat && s.n_nodes != s.n_ranks) return "one GPU per node only";
  if (const char* why = ineligible(t, s, f, algo)) return why;
  if (algo == Algo::nvls_tree && s.n_nodes == 1)
    return "needs more than one NVLink domain; NVLS is its one-domain form";
  if (algo == Algo::nvls && ag_rs && s.n_nodes > 1)
    return "all-gather / reduce-scatter across domains need CollNet's all-gather / reduce-scatter and a "
           "NIC head per GPU";
  bool any_proto = false;
  for (Proto proto : kAllProtos) any_proto = any_proto || t.user_proto[idx(f)][idx(proto)];
  if (!any_proto) return "NCCL_PROTO leaves no protocol";
  if (algo == Algo::nvls || algo == Algo::nvls_tree || algo == Algo::pat || algo == Algo::collnet_direct ||
      algo == Algo::collnet_chain)
    return "runs Simple only";
  return "its protocols are off (NCCL_PROTO, or LL128 on this topology)";
}

std::string nothing_left_message(const TuneTables& t, const CommShape& s, Func f) {
  std::string reasons;
  for (Algo algo : kAllAlgos) {
    if (!t.user_algo[idx(f)][idx(algo)]) continue;
    reasons += fmt::format("{}{}: {}", reasons.empty() ? "" : "; ", to_string(algo),
                           unavailable_reason(t, s, f, algo));
  }
  if (reasons.empty()) reasons = "NCCL_ALGO leaves no algorithm for it";
  return fmt::format(
      "no algorithm/protocol available for {} on {} ranks in {} NVLink domain{}: {}. Choose others with "
      "--algo / --proto (NCCL_ALGO / NCCL_PROTO)",
      to_string(f), s.n_ranks, s.n_nodes, s.n_nodes == 1 ? "" : "s", reasons);
}

}  // namespace

TuneTables tune_model(const CommShape& s, const NcclEnv& env, NcclVersion version) {
  check_shape(s);
  validate(env);
  const TunerConstants& k = tuner_constants(version);
  TuneTables t;
  t.version = version;
  thread_tables(s, env, t);
  const int n_ranks = s.n_ranks;
  if (n_ranks <= 1) return t;

  const TuneContext c(s, env, version);
  for (Func f : kAllFuncs) {
    const int coll = idx(f);
    const int nsteps = f == Func::all_reduce                                  ? 2 * (n_ranks - 1)
                       : (f == Func::reduce_scatter || f == Func::all_gather) ? n_ranks - 1
                                                                              : n_ranks;
    for (Algo algo : kAllAlgos)
      for (Proto proto : kAllProtos) {
        if (!modelled(c, f, algo, proto)) continue;
        const std::optional<float> bus = bus_bandwidth(c, f, algo, proto, nsteps);
        if (!bus) continue;
        t.bandwidth_GBps[coll][idx(algo)][idx(proto)] = *bus;
        t.computed[coll][idx(algo)][idx(proto)] = true;
        t.latency_us[coll][idx(algo)][idx(proto)] = latency(c, f, algo, proto, nsteps);
      }
  }
  apply_enables(s, env, version, k, t);
  return t;
}

Selection select_algorithm(const TuneTables& t, const CommShape& s, Func f, std::uint64_t bytes, bool fp8) {
  const TunerConstants& k = tuner_constants(t.version);
  Selection sel;
  sel.func = f;
  sel.bytes = bytes;
  for (auto& row : sel.time_us)
    for (float& x : row) x = -1;
  const int coll = idx(f);
  if (s.n_ranks == 1) {
    sel.time_us[idx(Algo::ring)][idx(Proto::simple)] = 0;
    sel.allowed[idx(Algo::ring)][idx(Proto::simple)] = true;
    sel.algo = Algo::ring;
    sel.proto = Proto::simple;
  } else {
    for (Algo algo : kAllAlgos) {
      const int a = idx(algo);
      if (ineligible(t, s, f, algo)) continue;
      for (Proto proto : kAllProtos) {
        const int p = idx(proto);
        float bw = t.bandwidth_GBps[coll][a][p];
        float lat = t.latency_us[coll][a][p];
        if (bw == 0) continue;  // time -1: disabled
        int log_size = log2i(bytes >> 6);
        if (bytes >> 6 == 0) log_size = -1;
        if (algo == Algo::tree && f == Func::all_reduce && log_size >= 0 && log_size < 23)
          bw *= static_cast<float>(k.tree_correction[p][log_size]);
        if (k.nvls_tree_correction_blackwell_x86 && algo == Algo::nvls_tree && f == Func::all_reduce && log_size >= 0 && log_size < 24 &&
            s.min_sm >= 100 && s.cpu_arch == CpuArch::x86)
          bw *= static_cast<float>(k.tree_correction[p][log_size]);
        if (algo == Algo::ring && proto == Proto::simple && s.n_nodes > 1 && f == Func::all_reduce &&
            bytes / (static_cast<std::uint64_t>(t.comm_channels) * static_cast<std::uint64_t>(s.n_ranks)) >= 64)
          lat *= static_cast<float>(s.min_sm < 80 ? k.ring_plateau_factor_pre_sm80 : k.ring_plateau_factor);
        float time = lat + static_cast<float>(bytes) / (1000 * bw);
        if (fp8 && algo == Algo::ring && s.n_ranks > 8) time *= 1024.0f;
        sel.time_us[a][p] = time;
        sel.allowed[a][p] = true;
      }
    }
    float best = 3600000000.0f;
    bool found = false;
    for (Algo algo : kAllAlgos)
      for (Proto proto : kAllProtos) {
        float time = sel.time_us[idx(algo)][idx(proto)];
        if (time >= 0 && time < best) {
          best = time;
          sel.algo = algo;
          sel.proto = proto;
          found = true;
        }
      }
    if (!found) throw InputError(nothing_left_message(t, s, f));
    sel.best_time_us = best;
  }

  // Channels and threads (topoGetAlgoInfo).
  const int a = idx(sel.algo), p = idx(sel.proto);
  int nc = t.comm_channels;
  int nt = t.max_threads[a][p];
  long threshold = t.thread_threshold[a][p];
  const auto b = static_cast<long double>(bytes);
  if (sel.algo == Algo::collnet_direct) {
    int sw = 16;
    bool flag = true;
    while (sw >= 1 && flag) {
      while ((flag = b < static_cast<long double>(nc) * nt * s.collnet_heads * threshold) && nc > sw) {
        if (nc == sw + sw / 2) threshold /= 2;
        --nc;
      }
      sw /= 2;
    }
  } else if (sel.algo == Algo::nvls || sel.algo == Algo::nvls_tree) {
    // From 2.28 NVLS across nodes (with CollNet) runs on at most the collective channels.
    nc = (t.version >= NcclVersion::v2_28_9 && s.n_nodes > 1 && sel.algo == Algo::nvls)
             ? std::min(t.nvls_channels, t.comm_channels)
             : t.nvls_channels;
  } else {
    while (b < static_cast<long double>(nc) * nt * threshold && nc >= 2) --nc;
  }
  if (sel.algo != Algo::nvls && sel.algo != Algo::nvls_tree && sel.algo != Algo::collnet_direct)
    while (b < static_cast<long double>(nc) * nt * threshold && nt % 128 == 0 && nt > 0) nt /= 2;
  if (sel.proto == Proto::simple) {
    if (sel.algo == Algo::ring) nt += kWarp;
    if (sel.algo == Algo::tree) nt += 4 * kWarp;
  }
  nt = nt / kWarp < 3 ? 3 * kWarp : nt;
  if (sel.algo == Algo::tree || sel.algo == Algo::pat) nt = kMaxNThreads;
  sel.n_channels = std::max(nc, 1);
  sel.n_threads = nt;
  return sel;
}

}  // namespace commstack::select
