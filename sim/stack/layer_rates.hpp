#pragma once
// The layers above the line rate for one call (predict.cpp): transport (the links' efficiency) and
// protocol (the protocol's wire share, the channels' copy rate, the per-chunk FIFO syncs, the
// pipeline fill of NVLS / NVLSTree / Tree, the P2P FIFO double copy), with the network stage
// slowed by a contention factor. Internal to sim/stack.
#include <cstdint>

#include "sim/stack/call_shape.hpp"

namespace commstack::sim::stack::detail {

struct RateInputs {
  select::Algo algo = select::Algo::ring;
  bool p2p = false;
  double S = 0;              // user bytes of the call
  double S_bus = 0;          // bus bytes (S x nccl-tests' bus factor)
  double line_Bps = 0;       // the slower resource at line rate, bus bytes per second
  Resources res;             // the call's resources (call_shape)
  double wire = 1;           // the protocol's data share of the wire (LL 1/2, LL128 120/128, Simple 1)
  double channels_Bps = 0;   // what the channels' warps copy, bus bytes per second
  double extra_chunks = 0;   // chunks beyond one per step, each a FIFO sync
  double chunk_sync_us = 0;  // profile's chunk_sync_us
  int channels = 1;
  int heads = 1;                // NVLS heads per channel (the domain's GPUs)
  double chunk_bytes = 0;       // user bytes per chunk per channel
  double inter_steps = 0;       // network steps of the call
  std::uint64_t p2p_steps = 0;  // FIFO steps of a P2P part (0: not modelled)
};

struct Rates {
  double transport_s = 0, protocol_s = 0, achievable_Bps = 0;
};

// `contention` >= 1: the fabric's share of the pattern's links (fabric_contention.hpp); 1 = idle.
Rates layer_rates(const RateInputs& in, double contention);

}  // namespace commstack::sim::stack::detail
