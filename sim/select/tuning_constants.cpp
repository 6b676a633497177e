#include "sim/select/tuning_constants.hpp"

#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack::select {

namespace {

// Values of NVIDIA/nccl src/graph/tuning.cc at tag v2.28.9-1 (ncclTunerConstantsDefaults).
TunerConstants make_2_28_9() {
  TunerConstants c{
      "NVIDIA/nccl tag v2.28.9-1, src/graph/tuning.cc",
      // base latencies (us): Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT x LL/LL128/Simple
      {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}},
      // hardware latencies (us)
      {
          // NVLINK
          {{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
          // PCI
          {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
          // NET
          {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}},
      },
      // llMaxBws
      {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}},
      // perChMaxRingLL128Bws
      {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {2 * 36.7, 34.6, 2 * 36.7}},
      // perChMaxTreeLL128Bws
      {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}},
      // perChMaxTreeBws
      {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}},
      // perChMaxNVLSTreeBws
      {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 43.8}},
      // nvlsEfficiency
      {0.0, 0.0, 0.85, 0.74},
      // treeCorrectionFactor (23 entries used; the 24th is HEAD's extension)
      {{1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
       {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
       {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}},
      23,
      false,
      false,
  };
  return c;
}

// NVIDIA/nccl master 5067397 (version.mk 2.30.7): differences from 2.28.9 only.
TunerConstants make_2_30_7() {
  TunerConstants c = make_2_28_9();
  c.source = "NVIDIA/nccl master 5067397 (2.30.7), src/graph/tuning.cc";
  c.per_ch_max_ring_ll128_bw[3][0] = 40.0;
  c.per_ch_max_ring_ll128_bw[3][1] = 40.0;
  c.per_ch_max_ring_ll128_bw[3][2] = 40.0;
  c.per_ch_max_nvls_tree_bw[3][2] = 80.0;
  c.nvls_tree_correction_blackwell_x86 = true;
  c.ll128_mixed_sm90 = true;
  return c;
}

}  // namespace

NcclVersion default_nccl_version() { return NcclVersion::v2_28_9; }

std::string to_string(NcclVersion v) { return v == NcclVersion::v2_28_9 ? "2.28.9" : "2.30.7"; }

NcclVersion parse_nccl_version(std::string_view text, std::string_view what) {
  std::string t(text);
  if (!t.empty() && (t[0] == 'v' || t[0] == 'V')) t.erase(0, 1);
  if (t == "2.28" || t == "2.28.9" || t == "2.28.9-1") return NcclVersion::v2_28_9;
  if (t == "2.30" || t == "2.30.7" || t == "2.30.7-1" || t == "head" || t == "HEAD") return NcclVersion::v2_30_7;
  throw InputError(fmt::format("{}: unknown NCCL tuning version '{}'; expected 2.28.9 or 2.30.7", what, text));
}

const TunerConstants& tuner_constants(NcclVersion v) {
  static const TunerConstants a = make_2_28_9();
  static const TunerConstants b = make_2_30_7();
  return v == NcclVersion::v2_28_9 ? a : b;
}

int arch_index(int sm) { return sm >= 100 ? 3 : sm >= 90 ? 2 : sm >= 80 ? 1 : 0; }

}  // namespace commstack::select
