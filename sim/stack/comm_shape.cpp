// comm_shape (predict.hpp): the communicator as NCCL's tuner sees it (graphs, channels, bandwidths),
// the input of NCCL's choice of algorithm, protocol and channels (sim/select).
#include <algorithm>
#include <limits>
#include <optional>

#include "sim/select/nccl_search.hpp"
#include "sim/select/nvls_tuning.hpp"
#include "sim/stack/predict.hpp"

namespace commstack::sim::stack {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// NCCL's topology search only tries these per-channel speeds (GB/s, src/graph/search.cc); the
// graph values it prints are one of them.
double snap_to_nccl_speed(double gbps) {
  static constexpr double kSpeeds[] = {48, 40, 30, 28, 24, 20, 18,  15,  12,   11,  10,
                                       9,  7,  6,  5,  4,  3,  2.4, 1.2, 0.24, 0.12};
  for (double s : kSpeeds)
    if (s <= gbps) return s;
  return 0.12;
}

}  // namespace

select::CommShape comm_shape(const CommGeometry& geo, const Knobs& knobs) {
  select::CommShape s;
  s.n_ranks = geo.ranks;
  s.n_nodes = geo.nccl_nodes;
  s.local_ranks = geo.local_ranks;
  s.min_sm = s.max_sm = geo.sm;
  // Grace (GH200 / GB200 / GB300) hosts are Arm; the x86 clusters in the data are Intel or
  // unknown. Arm changes NCCL's tuning in one place the model carries: 2.29+ applies its Tree
  // correction to NVLSTree on Blackwell only on x86 hosts.
  s.cpu_arch = geo.arm_host ? select::CpuArch::arm : select::CpuArch::x86;
  s.cpu_vendor = geo.arm_host ? select::CpuVendor::other : select::CpuVendor::intel;
  // NCCL sees NVLink at 20 / 20.6 / 40.1 GB/s per link (topo.h) where the line rate is 25 / 25 / 50:
  // 80% of the line rate.
  const double nccl_nvlink_GBps = 0.8 * geo.nvlink_Bps / 1e9;
  // Channels: where the GPUs of a domain meet in an NVSwitch, or one GPU per node talks over its
  // NIC, NCCL's own search on the node's NVLink and NIC bandwidths (sim/select/nccl_search.hpp; 16
  // coll channels on 2 H100 nodes as the nccl-tests#319 log prints; 2 on one A100 per node with an
  // HDR NIC, 4 on one B200 with a 400 Gb/s NIC). Elsewhere (GH200's direct NVLink) two per NIC rail
  // on 8-GPU nodes and one more doubling for NVLink5 (assumption, docs/stack-model.md).
  int channels = geo.sm >= 100 ? 32 : 16;
  if (geo.local_ranks <= 4 && geo.sm < 100) channels = std::min(channels, 2 * std::max(2, geo.local_ranks));
  const double bw_intra = snap_to_nccl_speed(std::min(40.0, nccl_nvlink_GBps / (channels / 2.0)));
  const double bw_inter = geo.nccl_nodes > 1
                              ? snap_to_nccl_speed(std::min(bw_intra, geo.nic_domain_Bps / 1e9 / channels))
                              : bw_intra;
  const auto inter_type = select::PathType::pix;  // a NIC per GPU on its PCIe switch (GPUDirect RDMA)
  s.ring = {channels, bw_intra, bw_inter, select::PathType::nvl, inter_type, 0, true, 4};
  s.tree = {channels,   bw_intra, bw_inter, select::PathType::nvl,
            inter_type, 0,        true,     geo.nccl_nodes > 1 ? 1 : 3};
  int comm_channels = channels;
  // NCCL's GPU -> NIC path bandwidth: the NIC's port, or the PCIe link in front of it, which NCCL
  // rates at 3/4 of its line rate (src/graph/topo.cc: Gen4 24, Gen5 48 GB/s).
  const double pcie = geo.pcie_Bps > 0 ? 0.75 * geo.pcie_Bps / 1e9 : kInf;
  const double net_path_GBps = geo.nccl_nodes > 1 ? std::min(geo.nic_port_Bps / 1e9, pcie) : 0.0;
  std::optional<select::GraphParams> searched_nvls;
  // NCCL's search where the model has its inputs: GPUs meeting in an NVSwitch, or one GPU per node
  // with its NICs (the search then only weighs the GPU's NIC path; NCCL rates the GPU's own links,
  // NVLink or else PCIe, as system->totalBw).
  const bool one_gpu_with_nics =
      geo.local_ranks == 1 && geo.nccl_nodes > 1 && geo.nics_domain > 0 && net_path_GBps > 0;
  if ((geo.nvswitch && geo.local_ranks >= 2 && geo.nvlink_Bps > 0 &&
       (geo.nccl_nodes == 1 || geo.nics_domain > 0)) ||
      one_gpu_with_nics) {
    select::SearchNode node;
    node.sm = geo.sm;
    node.gpus = geo.local_ranks;
    node.version = knobs.nccl_version;
    node.nvlink_GBps = geo.nvlink_Bps > 0 ? select::nvlink_links(geo.sm, geo.nvlink_Bps) *
                                                select::nccl_nvlink_link_GBps(geo.sm)
                                          : std::min(pcie, net_path_GBps);
    if (geo.nccl_nodes > 1) {
      node.nets = geo.nics_domain;
      node.net_path_GBps = net_path_GBps;
    }
    const select::SearchedGraphs g = select::search_nvswitch_node(node);
    s.ring = g.ring;
    s.tree = g.tree;
    comm_channels = g.comm_channels;
    searched_nvls = g.nvls;
  }
  // NVLS heads each drive one NIC: the NVLS graph's bwInter is a whole NIC (src/graph/search.cc
  // searches NVLS graphs per NIC), where Ring/Tree share the domain's NICs among all channels.
  const double nvls_inter = geo.nccl_nodes > 1 ? snap_to_nccl_speed(geo.nic_gpu_Bps / 1e9) : bw_intra;
  s.nvls = {channels, bw_intra, nvls_inter, select::PathType::nvl, inter_type, 0, true, 5};
  s.collnet_direct = {channels, bw_intra, bw_inter, select::PathType::nvl, inter_type, 0, true, 6};
  s.collnet_chain = {channels, bw_intra, bw_inter, select::PathType::nvl, inter_type, 0, true, 6};
  // NVLink SHARP needs NVSwitch gen3+ (sm >= 90) and more than 2 GPUs in the domain. GH200 nodes
  // wire their 4 GPUs all-to-all without an NVSwitch (the gh200-slingshot preset models that as
  // one NVLink plane), so they have no NVLS.
  // NCCL_NVLS_ENABLE=0 turns NVLS (and NVLSTree) off; 1 and the default leave it to the hardware check.
  s.nvls_support = knobs.env.nvls_enable != 0 && geo.sm >= 90 && geo.nvswitch && geo.local_ranks > 2 &&
                   geo.nvlink_Bps > 0 && geo.gpus_per_node >= 4;
  s.net_path_GBps = net_path_GBps;
  s.nvls_channels = channels;
  if (searched_nvls) {
    s.nvls = *searched_nvls;
    // Each NVLS graph channel starts at its own head GPU (src/graph/connect.cc nvlsHeadNum): all
    // GPUs of an 8-GPU domain, 32 of an NVL72 (NCCL_MAX_NVLS_ARITY), one per NIC across domains.
    s.nvls_heads = searched_nvls->n_channels;
    if (searched_nvls->n_channels == 0) s.nvls_support = false;
  }
  // NVLS channels and chunks as NCCL's release sets them at init (2.30 tunes them for Blackwell
  // across domains); the fallback above (GH200) keeps its channels.
  const select::NvlsTuning nvls = select::nccl_nvls_tuning(
      {knobs.nccl_version, geo.sm, geo.nccl_nodes, geo.local_ranks, net_path_GBps, inter_type}, knobs.env);
  if (searched_nvls) s.nvls_channels = nvls.channels;
  s.nvls_chunk_bytes = nvls.chunk_bytes;
  s.nvls_tree_max_chunk_bytes = nvls.tree_max_chunk_bytes;
  // NCCL sets CollNet up (src/init.cc) where its plugin loads, and keeps it from
  // NCCL_COLLNET_NODE_THRESHOLD (2) nodes on: NCCL's nodes, so an NVLink domain is one. The plugin
  // (SHARP) needs switches that reduce; torus and dragonfly routers do not (docs/topologies.md).
  // Where --collnet on asks for it anyway NCCL runs without it, silently; the reason is kept for
  // the communicator line (describe_comm) and for a forced CollNet algorithm's refusal.
  s.collnet_support = knobs.collnet && geo.nccl_nodes > 1 && geo.collnet_ports > 0;
  if (knobs.collnet && geo.nccl_nodes == 1)
    s.collnet_off_reason =
        "CollNet is not set up on one NVLink domain (NCCL counts a domain as one node and sets CollNet up "
        "from NCCL_COLLNET_NODE_THRESHOLD = 2 nodes)";
  else if (knobs.collnet && !s.collnet_support)
    s.collnet_off_reason =
        "CollNet is not set up on this fabric: its NICs reach no switch that reduces (CollNet needs "
        "SHARP-capable switches, as in an InfiniBand fat tree; torus and dragonfly routers do not reduce)";
  s.n_channels = comm_channels;
  if (knobs.comm_channels > 0) s.n_channels = knobs.comm_channels;
  if (knobs.nvls_channels > 0) s.nvls_channels = knobs.nvls_channels;
  return s;
}

}  // namespace commstack::sim::stack
