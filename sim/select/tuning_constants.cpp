#include "sim/select/tuning_constants.hpp"

#include <array>
#include <compare>
#include <cstdlib>
#include <sstream>

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

// NVIDIA/nccl tag v2.26.2-1 (tuning.cc identical up to v2.26.6-1): differences from 2.28.9 in the
// tables. Its NVLS formulas and enable rules are release checks in nccl_tuner.cpp.
TunerConstants make_2_26_2() {
  TunerConstants c = make_2_28_9();
  c.source = "NVIDIA/nccl tag v2.26.2-1, src/graph/tuning.cc";
  c.hw_latency_us[idx(Hw::net)][idx(Algo::nvls_tree)][idx(Proto::simple)] = 14;
  // Blackwell rows were Hopper's doubled: {2*36.7, ...}, {2*36.7, 2*36.7, 2*29.0}, {2*38.7, 2*41.4, 2*36.0}.
  for (double& x : c.per_ch_max_ring_ll128_bw[3]) x = 2 * 36.7;
  c.per_ch_max_tree_ll128_bw[3][0] = 2 * 36.7;
  c.per_ch_max_tree_ll128_bw[3][1] = 2 * 36.7;
  c.per_ch_max_tree_ll128_bw[3][2] = 2 * 29.0;
  c.per_ch_max_tree_bw[3][0] = 2 * 38.7;
  c.per_ch_max_tree_bw[3][1] = 2 * 41.4;
  c.per_ch_max_tree_bw[3][2] = 2 * 36.0;
  // No perChMaxNVLSTreeBws and no nvlsEfficiency before 2.28: the NVLS formulas do not read them.
  return c;
}

// NVIDIA/nccl tag v2.27.7-1 (= v2.27.6-1): its tables are 2.26's.
TunerConstants make_2_27_7() {
  TunerConstants c = make_2_26_2();
  c.source = "NVIDIA/nccl tag v2.27.7-1, src/graph/tuning.cc";
  return c;
}

// NVIDIA/nccl tag v2.29.3-1 (v2.29.2-1 has the same tuning.cc): differences from 2.28.9 only.
TunerConstants make_2_29_3() {
  TunerConstants c = make_2_28_9();
  c.source = "NVIDIA/nccl tag v2.29.3-1, src/graph/tuning.cc";
  c.per_ch_max_ring_ll128_bw[3][0] = 34.5;
  c.per_ch_max_ring_ll128_bw[3][1] = 34.6;
  c.per_ch_max_ring_ll128_bw[3][2] = 34.5;
  c.nvls_tree_correction_blackwell_x86 = true;
  return c;
}

// NVIDIA/nccl tag v2.29.7-1: differences from 2.29.3 only.
TunerConstants make_2_29_7() {
  TunerConstants c = make_2_29_3();
  c.source = "NVIDIA/nccl tag v2.29.7-1, src/graph/tuning.cc";
  c.per_ch_max_ring_ll128_bw[3][0] = 40.0;
  c.per_ch_max_ring_ll128_bw[3][1] = 40.0;
  c.per_ch_max_ring_ll128_bw[3][2] = 40.0;
  return c;
}

// NVIDIA/nccl master 5067397 (version.mk 2.30.7, = tag v2.30.7-1): differences from 2.29.7 only.
TunerConstants make_2_30_7() {
  TunerConstants c = make_2_29_7();
  c.source = "NVIDIA/nccl master 5067397 (2.30.7), src/graph/tuning.cc";
  c.per_ch_max_nvls_tree_bw[3][2] = 80.0;
  c.ll128_mixed_sm90 = true;
  return c;
}

struct Release {
  int major, minor, patch;
  auto operator<=>(const Release&) const =
      default;  // NOLINT(modernize-use-nullptr): clang-tidy 14 misreads the defaulted <=>
};

// "2.29.3", "v2.29.3-1", "2.29.3+cuda12.8" -> 2.29.3; nullopt if not three numbers.
std::optional<Release> parse_release(std::string_view text) {
  std::string t(text);
  if (!t.empty() && (t[0] == 'v' || t[0] == 'V')) t.erase(0, 1);
  const auto cut = t.find_first_of("+- \t");
  if (cut != std::string::npos) t.resize(cut);
  Release r{};
  char dot1 = 0, dot2 = 0;
  std::istringstream in(t);
  if (!(in >> r.major >> dot1 >> r.minor >> dot2 >> r.patch) || dot1 != '.' || dot2 != '.' || !in.eof())
    return std::nullopt;
  if (r.major < 0 || r.minor < 0 || r.patch < 0) return std::nullopt;
  return r;
}

struct Modeled {
  Release release;
  NcclVersion version;
};
// Releases whose rules a table reproduces, oldest first (2.26.2-2.26.6, 2.27.6-2.27.7 and 2.29.2-2.29.3
// share one: the files the model follows are the same).
constexpr std::array<Modeled, 11> kModeled{{{{2, 26, 2}, NcclVersion::v2_26_2},
                                            {{2, 26, 3}, NcclVersion::v2_26_2},
                                            {{2, 26, 5}, NcclVersion::v2_26_2},
                                            {{2, 26, 6}, NcclVersion::v2_26_2},
                                            {{2, 27, 6}, NcclVersion::v2_27_7},
                                            {{2, 27, 7}, NcclVersion::v2_27_7},
                                            {{2, 28, 9}, NcclVersion::v2_28_9},
                                            {{2, 29, 2}, NcclVersion::v2_29_3},
                                            {{2, 29, 3}, NcclVersion::v2_29_3},
                                            {{2, 29, 7}, NcclVersion::v2_29_7},
                                            {{2, 30, 7}, NcclVersion::v2_30_7}}};

}  // namespace

NcclVersion default_nccl_version() { return NcclVersion::v2_28_9; }

std::string to_string(NcclVersion v) {
  switch (v) {
    case NcclVersion::v2_26_2: return "2.26.2";
    case NcclVersion::v2_27_7: return "2.27.7";
    case NcclVersion::v2_28_9: return "2.28.9";
    case NcclVersion::v2_29_3: return "2.29.3";
    case NcclVersion::v2_29_7: return "2.29.7";
    case NcclVersion::v2_30_7: return "2.30.7";
  }
  return "?";
}

NcclVersion parse_nccl_version(std::string_view text, std::string_view what) {
  std::string t(text);
  if (!t.empty() && (t[0] == 'v' || t[0] == 'V')) t.erase(0, 1);
  if (t == "2.26") return NcclVersion::v2_26_2;
  if (t == "2.27") return NcclVersion::v2_27_7;
  if (t == "2.28") return NcclVersion::v2_28_9;
  if (t == "2.29") return NcclVersion::v2_29_7;
  if (t == "2.30" || t == "head" || t == "HEAD") return NcclVersion::v2_30_7;
  if (const auto r = parse_release(t))
    for (const auto& m : kModeled)
      if (m.release == *r) return m.version;
  throw InputError(
      fmt::format("{}: NCCL version '{}' has no tuning table here; expected 2.26.2, 2.26.3, 2.26.5, "
                  "2.26.6, 2.27.6, 2.27.7, 2.28.9, 2.29.2, 2.29.3, 2.29.7 or 2.30.7 (or a line 2.26 "
                  "... 2.30, or head)",
                  what, text));
}

std::optional<VersionMatch> match_printed_version(std::string_view printed) {
  const auto r = parse_release(printed);
  if (!r) return std::nullopt;
  // Same release: exact. Same major.minor line: its nearest modeled patch (the older on a tie), as
  // constants change least within a line. Else the newest modeled release older than it, else the
  // oldest modeled one.
  const Modeled* line = nullptr;
  const Modeled* below = nullptr;
  for (const auto& m : kModeled) {
    if (m.release == *r) return VersionMatch{m.version, true};
    if (m.release.major == r->major && m.release.minor == r->minor &&
        (!line || std::abs(m.release.patch - r->patch) < std::abs(line->release.patch - r->patch)))
      line = &m;
    if (m.release < *r) below = &m;
  }
  const Modeled* pick = line ? line : below ? below : &kModeled.front();
  return VersionMatch{pick->version, false};
}

const TunerConstants& tuner_constants(NcclVersion v) {
  static const TunerConstants o = make_2_26_2();
  static const TunerConstants p = make_2_27_7();
  static const TunerConstants a = make_2_28_9();
  static const TunerConstants b = make_2_29_3();
  static const TunerConstants c = make_2_29_7();
  static const TunerConstants d = make_2_30_7();
  switch (v) {
    case NcclVersion::v2_26_2: return o;
    case NcclVersion::v2_27_7: return p;
    case NcclVersion::v2_28_9: return a;
    case NcclVersion::v2_29_3: return b;
    case NcclVersion::v2_29_7: return c;
    case NcclVersion::v2_30_7: return d;
  }
  return a;
}

int arch_index(int sm) { return sm >= 100 ? 3 : sm >= 90 ? 2 : sm >= 80 ? 1 : 0; }

}  // namespace commstack::select
