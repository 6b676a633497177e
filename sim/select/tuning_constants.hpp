#pragma once
// NCCL's tuning constants, one table per NCCL version, copied as numbers from
// src/graph/tuning.cc (ncclTunerConstantsDefaults, nvlsEfficiency, treeCorrectionFactor) and
// src/graph/topo.h, and the rules that changed between releases (tags of NVIDIA/nccl):
//   v2_26_2 : v2.26.2-1 (tuning.cc, search.cc, nvls.cc and connect.cc identical up to v2.26.6-1):
//             NVLS / NVLSTree bandwidth min(bwIntra, bwInter) (NVLSTree bwInter / 2 from 3 nodes)
//             at 5/6 algorithm-to-bus ratio, no NVLSTree cap, NVLSTree network latency 14 us,
//             Blackwell per-channel caps at twice Hopper's, LL128 only on SM 70/80/90/100/120,
//             NVLS all-gather / reduce-scatter on one node only, Blackwell NVLS on 32 channels,
//             and the collective channels raised to the NVLS channels where fewer.
//   v2_27_7 : v2.27.7-1 (= v2.27.6-1): as 2.26 but NVLS all-gather / reduce-scatter at
//             min(bwIntra (ppn-1)/ppn, 0.9 bwInter) and across nodes with CollNet, LL128 on every
//             SM >= 70 (NCCL_LL128_C2C), Blackwell NVLS on 24 channels inside one NVLink domain,
//             Blackwell search speeds 18 (intra), 96 and 45.1 (inter).
//   v2_28_9 : v2.28.9-1 (the NCCL the project's calibration bench builds against; default):
//             nvlsEfficiency in the NVLS bandwidth, NVLSTree caps, network latency 20.9 us,
//             Blackwell tables of their own, NVLS across nodes on at most the collective channels.
//   v2_29_3 : v2.29.3-1 (tuning.cc identical in v2.29.2-1): Ring LL128 per-channel cap on Blackwell
//             34.5/34.6/34.5 GB/s (was 73.4/34.6/73.4); the tree correction also applies to
//             NVLSTree AllReduce on Blackwell x86.
//   v2_29_7 : v2.29.7-1: Ring LL128 per-channel cap on Blackwell 40.0 GB/s.
//   v2_30_7 : master 5067397 = v2.30.7-1: NVLSTree cap at >= 4 nodes 80.0 (was 43.8), LL128
//             allowed across mixed SMs >= 90, CollNetChain disabled when the plugin lacks it.
#include <optional>
#include <string>
#include <string_view>

#include "sim/select/nccl_types.hpp"

namespace commstack::select {

// Oldest first: the code compares versions (a rule "from 2.29.3 on" is `v >= v2_29_3`).
enum class NcclVersion { v2_26_2, v2_27_7, v2_28_9, v2_29_3, v2_29_7, v2_30_7 };
NcclVersion default_nccl_version();
std::string to_string(NcclVersion v);
// A modeled version by name: "2.26.2" (.3, .5, .6), "2.27.6", "2.27.7", "2.28.9", "2.29.2", "2.29.3",
// "2.29.7", "2.30.7" (also "v2.29.3-1"), a line "2.26" ... "2.30" (its newest modeled release),
// "head" (= 2.30.7); InputError naming `what` otherwise.
NcclVersion parse_nccl_version(std::string_view text, std::string_view what);

// The tuning model to use for the NCCL version a log printed ("2.26.2", "2.29.3+cuda12.8",
// "2.29.3-1"): the modeled version whose tuning.cc is that release's (exact), else the nearest
// modeled patch of the same major.minor line, else the newest modeled release older than it, else
// the oldest modeled one. nullopt when `printed` is not a version number.
struct VersionMatch {
  NcclVersion version;
  bool exact;
};
std::optional<VersionMatch> match_printed_version(std::string_view printed);

inline constexpr int kNumHw = 3;  // NVLINK, PCI, NET
enum class Hw { nvlink, pci, net };
constexpr int idx(Hw h) { return static_cast<int>(h); }
inline constexpr int kNumArch = 4;  // Volta, Ampere, Hopper, Blackwell (NCCL "compcap index")

struct TunerConstants {
  std::string source;  // where the numbers come from
  double base_latency_us[kNumAlgos][kNumProtos];
  double hw_latency_us[kNumHw][kNumAlgos][kNumProtos];
  // [row][N1/N2/N4 column]; llMaxBws rows: arch when nNodes == 1, else 0 = Intel, 1 = AMD.
  double ll_max_bw[kNumArch][3];
  double per_ch_max_ring_ll128_bw[kNumArch][3];
  double per_ch_max_tree_ll128_bw[kNumArch][3];
  double per_ch_max_tree_bw[kNumArch][3];
  double per_ch_max_nvls_tree_bw[kNumArch][3];
  double nvls_efficiency[kNumArch];
  // Tree AllReduce bandwidth correction by log2(bytes/64), 64 B .. 512 MB.
  double tree_correction[kNumProtos][24];
  int tree_correction_len = 23;  // entries used for Tree (NCCL checks logSize < 23)
  bool nvls_tree_correction_blackwell_x86 = false;
  bool ll128_mixed_sm90 = false;  // LL128 allowed when min SM >= 90 even if SMs differ
  // NVLink GB/s per link by SM (topo.h), PCI and NET constants used by path modelling.
  double ring_plateau_factor_pre_sm80 = 1.9;
  double ring_plateau_factor = 1.4;
};

const TunerConstants& tuner_constants(NcclVersion v);

// NCCL's "compcap index": 0 Volta (and older), 1 Ampere, 2 Hopper, 3 Blackwell and newer.
int arch_index(int sm);

}  // namespace commstack::select
