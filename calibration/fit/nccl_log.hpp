#pragma once
// Parser for NCCL_DEBUG=INFO logs (NCCL_DEBUG_SUBSYS including INIT,GRAPH,TUNING,COLL): the
// facts the selection model and the calibration need, in plain structs. Lines are found by the
// "NCCL INFO " marker, so mpirun/srun prefixes ("[0] host:pid:tid [dev] ...") are fine and all
// other output is ignored. Algorithm and protocol names are normalised to lower case with
// underscores: tree ring collnet_direct collnet_chain nvls nvls_tree pat / ll ll128 simple.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace commstack::fit {

// Per-call choice printed by rank 0.
//   2.19+: "AllReduce: 16777216 Bytes -> Algo TREE proto LL128 channel{Lo..Hi}={0..15}"
//   older TRACE form: "128 Bytes -> Algo 0 proto 0 time 25.214764" (indices, model time in us)
struct NcclTuningChoice {
  int line = 0;
  std::string func;  // "AllReduce"...; "" in the old form (the function is not printed)
  std::uint64_t bytes = 0;
  std::string algo;   // normalised
  std::string proto;  // normalised
  std::optional<int> channel_lo, channel_hi;
  std::optional<double> model_time_us;  // old form only
};

// "AllReduce: opCount 3 sendbuff 0x.. recvbuff 0x.. count 1024 datatype 7 op 0 root 0 comm 0x.. [nranks=16] stream 0x.."
struct NcclCollCall {
  int line = 0;
  std::string func;
  std::uint64_t op_count = 0;
  std::uint64_t count = 0;
  int datatype = 0;
  int op = 0;
  int root = 0;
  std::optional<int> nranks;
};

// GRAPH: "Pattern 4, crossNic 0, nChannels 16, bw 40.000000/40.000000, type NVL/PIX, sameChannels 0"
// (NCCL < 2.12 printed "speed" instead of "bw").
struct NcclGraphLine {
  int line = 0;
  int pattern = 0;
  int cross_nic = 0;
  int n_channels = 0;
  double bw_intra_GBps = 0;  // per channel
  double bw_inter_GBps = 0;  // per channel
  std::string type_intra;    // NVL, PIX, PXB, PHB, SYS, ...
  std::string type_inter;
  int same_channels = 0;
};

// "Channel 00/16 :    0   7   6 ..." (ring order of one channel) or "Ring 02 : 1 -> 0 -> 7".
struct NcclRingLine {
  int line = 0;
  int channel = 0;
  int n_channels = 0;      // the "/16" part; 0 for "Ring" lines
  std::vector<int> ranks;  // full order for Channel lines; prev, self, next for Ring lines
};

// "Trees [0] 1/-1/-1->0->7 [1] ..." : per channel the three children, self, parent.
struct NcclTreeEntry {
  int channel = 0;
  int down[3] = {-1, -1, -1};
  int self = -1;
  int up = -1;
};
struct NcclTreeLine {
  int line = 0;
  std::vector<NcclTreeEntry> entries;
};

// "comm 0x.. rank 0 nRanks 24 nNodes 3 localRanks 8 localRank 0 MNNVL 0" (older: "nranks 16").
struct NcclCommLine {
  int line = 0;
  int rank = -1;
  int n_ranks = 0;
  std::optional<int> n_nodes, local_ranks, local_rank, mnnvl;
};

// One cell of the init-time tuning table: model latency (us) and algorithm bandwidth (GB/s).
struct NcclTuningCell {
  int line = 0;
  std::string func;  // Broadcast, Reduce, AllGather, ReduceScatter, AllReduce
  std::string algo;
  std::string proto;
  double latency_us = 0;
  double bw_GBps = 0;
};

struct NcclLog {
  std::string origin;
  int nccl_lines = 0;  // lines carrying "NCCL INFO"/"NCCL WARN"
  std::optional<std::string> nccl_version;  // "2.26.2"
  std::vector<NcclCommLine> comms;
  std::vector<NcclTuningChoice> choices;
  std::vector<NcclCollCall> colls;
  std::vector<NcclGraphLine> graphs;
  std::vector<NcclRingLine> rings;
  std::vector<NcclTreeLine> trees;
  std::vector<NcclTuningCell> tuning_table;
  std::map<std::string, int> max_nthreads;  // "algo/proto" -> threads from the " Max NThreads" row
  std::map<std::string, std::string> env;  // "NCCL_ALGO" -> "Tree" from "... set by environment to ..."
  std::optional<int> coll_channels, nvls_channels, p2p_channels;  // "16 coll channels, ... nvls channels"
  bool nvls_multicast = false;  // "NVLS multicast support is available"
  std::vector<std::string> warnings;  // excerpt mode: malformed lines that were skipped
  std::vector<std::string> tuning_skipped;  // excerpt mode: those of them that are TUNING lines

  // Table lookup; nullptr when the cell was not printed.
  const NcclTuningCell* cell(std::string_view func, std::string_view algo, std::string_view proto) const;
};

struct NcclLogOptions {
  // Published excerpts are cut mid-line. With excerpt = true a recognised line that is
  // incomplete is skipped and noted in `warnings`; by default it is an InputError.
  bool excerpt = false;
};

NcclLog parse_nccl_log(std::string_view text, const std::string& origin, NcclLogOptions options = {});
NcclLog parse_nccl_log_file(const std::string& path, NcclLogOptions options = {});

// "TREE", "Tree", "NVLS_TREE", "NVLSTree", "CollNetDirect", "0".."6" -> normalised name, "" if unknown.
std::string normalize_nccl_algo(std::string_view name);
// "LL", "LL128", "SIMPLE", "Simple", "0".."2" -> "ll" / "ll128" / "simple", "" if unknown.
std::string normalize_nccl_proto(std::string_view name);

}  // namespace commstack::fit
