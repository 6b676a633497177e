#pragma once
// The layered predictor of one NCCL collective call (docs/stack-model.md):
//   time = launch + algorithm latency + fabric latency + fabric bandwidth + transport + protocol + contention
// Each term is what one layer adds when the layers are switched on one at a time from the bottom
// (line-rate fabric first), so the terms add up to the total exactly. Which algorithm, protocol
// and channel count a call uses comes from sim/select (NCCL's own choice) for a communicator
// shape derived from the cluster, unless the knobs force them.
#include <cstdint>
#include <optional>
#include <string>

#include "sim/algorithms/collective.hpp"
#include "sim/select/nccl_env.hpp"
#include "sim/select/nccl_tuner.hpp"
#include "sim/select/p2p_channels.hpp"
#include "sim/stack/fabric_contention.hpp"
#include "sim/stack/profile.hpp"
#include "topologies/cluster.hpp"

namespace commstack::sim::stack {

struct Knobs {
  select::NcclEnv env;            // NCCL_ALGO / NCCL_PROTO / NCCL_MIN_CTAS / NCCL_MAX_CTAS / NCCL_NVLS_ENABLE
  std::uint64_t buffsize = 0;     // NCCL_BUFFSIZE (Simple FIFO bytes); 0 = NCCL's default
  bool collnet = false;           // a CollNet (SHARP) plugin is loaded
  // Communicators one host thread drives (nccl-tests -g): the thread launches each one's kernel in
  // turn inside one ncclGroupStart/End, so the host time of a call is that many launches.
  int gpus_per_thread = 1;
  // The timed calls are replayed from a captured CUDA graph (nccl-tests -G N, N > 0): the host
  // launches one graph for all of them, so no call waits on the host.
  bool cuda_graph = false;
  // Each call is timed on its own, launched and waited for (cudaStreamSynchronize) before the next
  // (OSU's NCCL benchmarks): the host launch adds to the device time instead of hiding behind it.
  bool synchronized_calls = false;
  // Whose tuning model picks the algorithm, protocol and channels (NCCL's constants change between
  // releases; sim/select/tuning_constants.hpp).
  select::NcclVersion nccl_version = select::default_nccl_version();
  // The communicator's channels as the measured run's NCCL printed them ("16 coll channels, ...
  // 16 nvls channels", NCCL_DEBUG=INFO); 0: NCCL's search as modelled (sim/select/nccl_search).
  int comm_channels = 0;
  int nvls_channels = 0;
};

// Where the layers' contributions go. All in seconds.
struct Breakdown {
  double launch_s = 0;             // host time per call the device time does not hide (back-to-back calls)
  double algorithm_latency_s = 0;  // software latency of the algorithm's sequential steps
  double fabric_latency_s = 0;     // wire/switch latency of those steps (topology route latencies)
  double fabric_bandwidth_s = 0;   // bus bytes at the fabric's line rate (narrowest resource)
  double transport_s = 0;          // line rate -> what P2P / NET / NVLS transports achieve
  double protocol_s = 0;           // wire format, per-channel copy cap, per-chunk FIFO sync
  double contention_s =
      0;  // the call's own network flows sharing fabric links beyond the NICs (fabric_contention.hpp)
  // Fixed summation order, so total_s() is the same number everywhere it is computed.
  double total_s() const {
    return launch_s + algorithm_latency_s + fabric_latency_s + fabric_bandwidth_s + transport_s + protocol_s +
           contention_s;
  }
};

struct Prediction {
  double time_s = 0;  // == breakdown.total_s()
  Breakdown breakdown;
  std::string algorithm;  // NCCL's name ("Ring", "NVLS", ...) or "P2P" for alltoall/sendrecv
  select::Proto proto = select::Proto::simple;
  int channels = 1;
  double chunk_bytes = 0;         // user data per chunk per channel
  double busbw_line_GBps = 0;     // bus bandwidth the fabric allows at line rate for this algorithm
  double busbw_achievable_GBps = 0;  // after transport efficiencies, the protocol and contention (no latency)
  double contention_factor = 1;  // how much slower the fabric carries the network stage than the NICs alone
};

// What the predictor knows about the communicator, derived from the cluster (docs/stack-model.md).
struct CommGeometry {
  int ranks = 1;
  int nodes = 1;          // physical nodes
  int gpus_per_node = 1;
  int nccl_nodes = 1;     // NVLink domains: NCCL's nNodes (an NVL72 rack is one)
  int local_ranks = 1;    // ranks per NVLink domain
  // Tree across domains: what the busiest domain sends per all-reduce, in units of the buffer (NCCL's
  // double binary tree, sim/select/nccl_trees: 1 on 2 domains, 1.5 on 3, 2 from 4 on).
  double tree_egress = 0;
  int sm = 90;
  bool nvswitch = true;   // GPUs meet in an NVSwitch (NVLS possible); false for PCIe or direct NVLink
  bool arm_host = false;  // Grace superchips (GH200, GB200, GB300): NCCL's cpuArch is ARM
  double nvlink_Bps = 0;  // per GPU per direction, line rate
  double nic_domain_Bps = 0;  // all NICs of one NVLink domain used by the communicator, line rate
  double nic_gpu_Bps = 0;     // the NIC(s) of one GPU
  int nics_domain = 0;        // NICs of one NVLink domain used by the communicator
  int nic_gpus_domain = 0;    // GPUs of one NVLink domain with a NIC of their own: CollNet's heads
  double nic_port_Bps = 0;    // the fastest of those NICs, line rate
  double pcie_Bps = 0;        // GPU <-> NIC PCIe, line rate per direction
  double route_latency_intra_s = 0;  // GPU -> GPU inside a domain (topology)
  double route_latency_inter_s = 0;  // GPU -> GPU across domains (topology)
  // Network ports of the first NVLink domain's GPUs on fabric switches that can reduce (InfiniBand
  // SHARP, sim::collnet_ports): 0 where the NICs reach torus or dragonfly routers only, whose
  // fabric cannot run CollNet.
  int collnet_ports = 0;
};

class Predictor {
public:
  // Builds the topology once (for route latencies) and NCCL's tuning tables for the shape.
  // Throws InputError for impossible node / GPU counts.
  Predictor(const topologies::ClusterSpec& spec, int nodes, int gpus_per_node, Knobs knobs = {});

  Prediction predict(CollectiveOp op, std::uint64_t bytes, const Profile& profile) const;

  // The profile-independent half of predict(): NCCL's choice of algorithm, protocol and channels
  // for the call. Calibration computes it once per measured point and reuses it.
  struct Choice {
    CollectiveOp op = CollectiveOp::allreduce;
    std::uint64_t bytes = 0;
    std::string algorithm;
    select::Algo algo = select::Algo::ring;
    select::Proto proto = select::Proto::simple;
    int channels = 1;
    bool p2p = false;
    // P2P inside one NVLink domain: FIFO steps of each channel's part of a peer's bytes (NCCL's
    // per-peer split, sim/protocol p2p_split); 0 when not modelled (LL, across the network).
    std::uint64_t p2p_steps = 0;
    // NCCL's own time estimate for the chosen algorithm/protocol (ncclTopoGetAlgoTime, the number
    // its tuner minimises), in us; < 0 where NCCL has no model (alltoall, sendrecv, one rank).
    double nccl_model_us = -1;
  };
  Choice choose(CollectiveOp op, std::uint64_t bytes) const;
  // NCCL's P2P path (send/receive, all-to-all) never reads NCCL_PROTO: it runs LL while a peer's
  // bytes fit NCCL_P2P_LL_THRESHOLD per channel and Simple above, never LL128, whatever the knobs
  // force, and choose() does the same. Where the knobs force a protocol for such an `op`, one line
  // saying it is ignored (for a "# note:"); empty otherwise.
  std::string p2p_proto_note(CollectiveOp op) const;
  Prediction evaluate(const Choice& choice, const Profile& profile) const;

  const select::CommShape& shape() const { return shape_; }
  const CommGeometry& geometry() const { return geo_; }

 private:
  CommGeometry geo_;
  select::CommShape shape_;
  select::TuneTables tables_;
  select::P2pChannels p2p_;  // NCCL's send/receive channels and channels per peer
  Knobs knobs_;
  std::optional<ContentionCache> contention_;  // set by the constructor
};

// One-shot form of Predictor::predict.
Prediction predict(const topologies::ClusterSpec& spec, int nodes, int gpus_per_node, CollectiveOp op,
                   std::uint64_t bytes, const Profile& profile, const Knobs& knobs = {});

// NCCL's graph values for a cluster (channels, per-channel bwIntra / bwInter, path types, NVLS).
select::CommShape comm_shape(const CommGeometry& geo, const Knobs& knobs);

}  // namespace commstack::sim::stack
