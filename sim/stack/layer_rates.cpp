#include "sim/stack/layer_rates.hpp"

#include <algorithm>
#include <cmath>

namespace commstack::sim::stack::detail {

using select::Algo;

Rates layer_rates(const RateInputs& in, double contention) {
  const Resources& res = in.res;
  const double S = in.S, S_bus = in.S_bus, line = in.line_Bps, wire = in.wire, channels_Bps = in.channels_Bps;
  const double extra_chunks = in.extra_chunks;
  const Algo algo = in.algo;
  const bool p2p = in.p2p;
  const int nch = in.channels, g = in.heads;
  Rates out;
  const double intra_achieved = res.intra_Bps * res.eta_intra;
  const double inter_achieved = res.inter_Bps * res.eta_inter / contention;
  const double transported = std::min(intra_achieved, inter_achieved);
  const double capped = std::min(transported * wire, channels_Bps);
  out.transport_s = S_bus / transported - S_bus / line;
  // The per-chunk FIFO sync is GPU work, in series with the GPU's copies. When the network is
  // the slower stage of the pipeline (GPU copies -> proxy -> NIC), the GPU stage has slack and
  // its syncs hide behind the NIC: only what the GPU stage takes beyond the NIC stage shows.
  double sync_s = extra_chunks * in.chunk_sync_us * 1e-6;
  if (inter_achieved < intra_achieved) {
    const double gpu_Bps = std::min(intra_achieved * wire, channels_Bps);
    sync_s = std::max(0.0, S_bus / gpu_Bps + sync_s - S_bus / capped);
  }
  out.protocol_s = (S_bus / capped - S_bus / transported) + sync_s;
  if (!p2p && (algo == Algo::nvls || algo == Algo::nvls_tree || algo == Algo::tree)) {
    // Pipeline fill. A chunk goes through the stages of the algorithm one after the other, and
    // chunk k+1 enters a stage as chunk k leaves it, so a call takes the slowest stage's time
    // for every loop (the bandwidth term) plus one loop through each of the other stages, each
    // at its own rate: the NVLink stages at the GPU's, the network hops at the NICs'.
    // NVLS: one loop of the kernel gives every (channel, head) pair a chunk and goes through
    // the reduction in the switch (multimem.ld_reduce), across domains one network hop up and
    // one down per tree level (NVLSTree: the heads' sends and receives), and the multicast
    // (multimem.st). On one node (2 equal stages) this is one loop-time, what makes the H100
    // busbw jump where NCCL doubles the NVLS chunk (1 GiB on 8 GPUs: 437 -> 466 GB/s, dgxc
    // log) less than the per-chunk sync alone predicts; on two H100 nodes the NVLink stages are
    // the slow ones and the two hops add what keeps NVLSTree 5-10% below its bandwidth bound up
    // to 128 MiB (issue309 logs).
    // Tree: a loop is one chunk per channel. Across the network NCCL's proxy posts a FIFO step
    // only once the GPU has written all of it, whatever the protocol (src/transport/net.cc),
    // so each of the 2 log2(nodes) hops up and down the tree forwards whole chunks. The chain
    // inside the node is no stage: a chain GPU's NVLink port carries both directions of the
    // tree, busy from the first chunk up to the last chunk down, so its fill hides (the flows
    // of sim/algorithms/tree.cpp reach the NVLink bound on 2 nodes and pay the network hops'
    // loops on 4 and 16, docs/stack-model.md). NCCL sizes the Tree/LL128 chunk against this
    // depth (calcCollChunking's 1 + log2 nodes + 0.1 ppn).
    const int heads = algo == Algo::tree ? 1 : std::max(1, g);
    const double loop_bytes = static_cast<double>(nch) * heads * in.chunk_bytes;
    const double t_nvlink = S_bus / std::min(intra_achieved * wire, channels_Bps);
    const double t_net = std::isfinite(inter_achieved) ? S_bus / (inter_achieved * wire) : 0.0;
    const double nvlink_stages = algo != Algo::tree ? 2.0 : 0.0;
    const double fill = std::max(0.0, nvlink_stages * t_nvlink + in.inter_steps * t_net - S_bus / capped);
    out.protocol_s += std::min(1.0, loop_bytes / S) * fill;
  }
  if (in.p2p_steps > 0) {
    // P2P (Simple and LL) moves each chunk twice, sender into the FIFO slot and receiver out of
    // it, pipelined over the FIFO steps: a part of s chunks takes s + 1 chunk times.
    out.protocol_s += S_bus / capped / static_cast<double>(in.p2p_steps);
  }
  out.achievable_Bps = capped;
  return out;
}

}  // namespace commstack::sim::stack::detail
