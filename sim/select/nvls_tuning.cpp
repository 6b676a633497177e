#include "sim/select/nvls_tuning.hpp"

#include <algorithm>

namespace commstack::select {
namespace {

constexpr std::uint64_t KiB = 1024;

// ncclNvlsTreeSm100Tuning (NVIDIA/nccl v2.30.7-1 src/transport/nvls.cc): Blackwell across NVLink
// domains. NCCL compares the path bandwidth with 48 and 96 GB/s: a 400 Gb/s NIC behind PCIe Gen5
// (48) or an 800 Gb/s one (96). Where no branch applies the defaults stay and the ceiling falls
// back to NCCL's older rule.
void sm100_multi_node(const NvlsCommInputs& in, NvlsTuning& t, std::uint64_t& tree_max) {
  const int ppn = in.ranks_per_node;
  const double nic = in.min_net_GBps;
  const bool near_nic = in.gpu_to_nic <= PathType::pxb;
  t.chunk_bytes = 128 * KiB;
  if (in.nodes == 2 && nic >= 48.0) {
    t.channels = 32;
    tree_max = 128 * KiB;
    if (ppn <= 4) {
      t.chunk_bytes = 256 * KiB;
      tree_max = 256 * KiB;
    } else if (ppn >= 16 || (ppn <= 8 && near_nic && nic < 96.0)) {
      tree_max = 64 * KiB;
    }
  } else if (nic >= 96.0) {
    if (ppn <= 8) {
      t.channels = 24;
      t.chunk_bytes = 256 * KiB;
      tree_max = 256 * KiB;
    } else {
      t.channels = 32;
      tree_max = ppn < 32 ? 128 * KiB : 64 * KiB;
    }
  } else if (nic >= 48.0) {
    t.channels = 24;
    tree_max = near_nic ? 64 * KiB : 128 * KiB;
  }
}

}  // namespace

NvlsTuning nccl_nvls_tuning(const NvlsCommInputs& in, const NcclEnv& env) {
  NvlsTuning t;
  // NVLS_NCHANNELS_SM90 16; Blackwell 24 inside one NVLink domain (NVL), 32 across (2.26: 32 both).
  const bool sm100_32 = in.nodes > 1 || in.version <= NcclVersion::v2_26_2;
  t.channels = in.sm >= 100 ? (sm100_32 ? 32 : 24) : 16;
  t.chunk_bytes = 128 * KiB;
  std::uint64_t tree_max = 0;  // 0: not set by the tuning
  if (in.version >= NcclVersion::v2_30_7 && in.sm >= 100 && in.nodes > 1) sm100_multi_node(in, t, tree_max);
  // The user's NCCL_NVLS_CHUNKSIZE wins over the tuning, and NCCL_NVLSTREE_MAX_CHUNKSIZE too.
  if (env.nvls_chunksize > 0) t.chunk_bytes = static_cast<std::uint64_t>(env.nvls_chunksize);
  if (env.nvlstree_max_chunksize != -2) tree_max = static_cast<std::uint64_t>(env.nvlstree_max_chunksize);
  // Up to 2.29 (and in 2.30 where the tuning set nothing): 64 KiB on 4 or more domains.
  if (tree_max == 0) tree_max = in.nodes >= 4 ? 64 * KiB : t.chunk_bytes;
  t.tree_max_chunk_bytes = tree_max;
  // Clamped to [NCCL_MIN_CTAS, NCCL_MAX_CTAS] like the other channels (both releases).
  t.channels = bound_by_ctas(t.channels, env);
  return t;
}

}  // namespace commstack::select
