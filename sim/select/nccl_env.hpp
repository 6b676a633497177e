#pragma once
// NCCL's user overrides that the tuning model honours: NCCL_ALGO / NCCL_PROTO (plain list,
// "^" exclusion, and the per-function form "allreduce:tree,ring;broadcast:ring" of NCCL >= 2.24),
// NCCL_MIN_CTAS / NCCL_MAX_CTAS, NCCL_NTHREADS / NCCL_LL128_NTHREADS, NCCL_NET_OVERHEAD,
// NCCL_PAT_ENABLE, NCCL_NVLS_ENABLE, NCCL_LL128_C2C, NCCL_MNNVL_ENABLE, NCCL_NVLS_CHUNKSIZE,
// NCCL_NVLSTREE_MAX_CHUNKSIZE, and the two that give send/receive over the network LL buffers,
// NCCL_ALLOC_P2P_NET_LL_BUFFERS and NCCL_NET_SHARED_BUFFERS.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/select/nccl_types.hpp"

namespace commstack::select {

struct NcclEnv {
  std::optional<std::string> algo;   // NCCL_ALGO
  std::optional<std::string> proto;  // NCCL_PROTO
  int min_ctas = 0;                  // NCCL_MIN_CTAS, 0 = unset (1)
  int max_ctas = 0;                  // NCCL_MAX_CTAS, 0 = unset (64)
  int nthreads = -2;                 // NCCL_NTHREADS, -2 = unset
  int ll128_nthreads = -2;           // NCCL_LL128_NTHREADS
  std::optional<double> net_overhead_ns;  // NCCL_NET_OVERHEAD (ns)
  int pat_enable = 2;                // NCCL_PAT_ENABLE: 0 off, 1 on, 2 auto
  int nvls_enable = 2;               // NCCL_NVLS_ENABLE: 0 off
  bool ll128_c2c = true;             // NCCL_LL128_C2C
  // NCCL_MNNVL_ENABLE: 0 off (each node is its own NVLink domain; nodes talk over their NICs), 1 on,
  // 2 auto. NCCL uses a multi-node NVLink domain only when the fabric and IMEX allow it and falls
  // back to the network silently otherwise (src/mnnvl.cc), so 1 and 2 both mean the cluster's
  // domains here.
  int mnnvl_enable = 2;
  std::int64_t nvls_chunksize = 0;           // NCCL_NVLS_CHUNKSIZE (bytes), 0 = unset (128 KiB)
  std::int64_t nvlstree_max_chunksize = -2;  // NCCL_NVLSTREE_MAX_CHUNKSIZE (bytes), -2 = unset
  // Send/receive connections over the network (net transport, connIndex 1) share one pool of
  // Simple buffers (NCCL_NET_SHARED_BUFFERS, default -2 = shared) and get an LL buffer only with
  // NCCL_ALLOC_P2P_NET_LL_BUFFERS=1 (src/init.cc: comm->allocP2pNetLLBuffers = param == 1;
  // src/transport/net.cc sendProxyConnect / recvProxyConnect). addP2pToPlan (src/enqueue.cc) takes
  // LL only for a peer whose connection has an LL buffer, so without either knob every peer across
  // NVLink domains runs Simple whatever its size (NCCL 2.14 onwards). NET_SHARED_BUFFERS=0 gives
  // the connections dedicated buffers of every protocol, LL included.
  bool alloc_p2p_net_ll_buffers = false;  // NCCL_ALLOC_P2P_NET_LL_BUFFERS: true only for "1"
  int net_shared_buffers = -2;            // NCCL_NET_SHARED_BUFFERS: -2 = unset (shared), 0 = dedicated
};

// Whether send/receive peers across NVLink domains (NCCL's net transport) have LL buffers, so that
// NCCL's P2P path may run them on LL: NCCL_ALLOC_P2P_NET_LL_BUFFERS=1 or NCCL_NET_SHARED_BUFFERS=0.
bool p2p_net_ll_buffers(const NcclEnv& env);

// Enabled flags per function: algo[f][a], proto[f][p] (LL128 starts at 2 = "auto").
struct EnableMatrix {
  int algo[kNumFuncs][kNumAlgos];
  int proto[kNumFuncs][kNumProtos];
  EnableMatrix();
};

// Applies one NCCL_ALGO (is_algo) or NCCL_PROTO value with NCCL's parseList rules. Throws
// InputError naming `var` for an unknown function prefix or element, or a later entry without
// a prefix (NCCL rejects those too).
void apply_nccl_list(std::string_view value, std::string_view var, bool is_algo, EnableMatrix& m);

// `channels` clamped to [NCCL_MIN_CTAS, NCCL_MAX_CTAS] as graph/connect.cc does (min with maxCTAs,
// then copied up to minCTAs); unchanged where neither is set.
int bound_by_ctas(int channels, const NcclEnv& env);

// Checks ranges (CTAs 1..64, threads multiple of 32 in 64..640) and throws InputError naming the variable.
void validate(const NcclEnv& env);

}  // namespace commstack::select
