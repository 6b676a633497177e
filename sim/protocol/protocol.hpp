#pragma once
// The protocol layer of NCCL's communication stack: what a protocol's wire format costs
// (LL, LL128, Simple) and how NCCL cuts one call into chunks (src/enqueue.cc calcCollChunking).
// docs/stack-model.md explains each number.
#include <cstdint>
#include <string>

#include "sim/select/nccl_types.hpp"

namespace commstack::sim::protocol {

// Fraction of the bytes on the wire that are user data, fixed by the format:
// LL: 8-byte lines carry 4 B of data + a 4 B flag -> 0.5; LL128: 128-byte lines carry 120 B -> 0.9375;
// Simple: data only -> 1.
double wire_efficiency(select::Proto proto);

// NCCL's default per-connection FIFO size (comm->buffSizes): LL 512 KiB, LL128 4,915,200 B,
// Simple 4 MiB (NCCL_BUFFSIZE). A FIFO has NCCL_STEPS = 8 slots.
std::uint64_t default_buffer_bytes(select::Proto proto);
inline constexpr int kNcclSteps = 8;
// The smallest NCCL_BUFFSIZE a model of it means anything at: each of the 8 slots holds one 16-byte
// pack (NCCL's Simple primitives copy in 16-byte loads); below it a slot holds no data and a call
// would never end.
inline constexpr std::uint64_t kMinBufferBytes = std::uint64_t{kNcclSteps} * 16;
// Refuses (InputError "<where>: ...") an NCCL_BUFFSIZE below kMinBufferBytes; 0 included, which
// NCCL's own parser does not treat as "default".
void check_buffer_bytes(std::uint64_t bytes, const std::string& where);
// NCCL_NVLS_CHUNKSIZE's default (src/transport/nvls.cc): the largest NVLS and NVLSTree chunk.
inline constexpr std::uint64_t kNvlsChunkBytes = 131072;
// Send/receive FIFO slots of the Simple protocol: NCCL_P2P_NVL_CHUNKSIZE inside an NVLink domain,
// NCCL_P2P_NET_CHUNKSIZE across the network (defaults, src/init.cc).
inline constexpr std::uint64_t kP2pNvlChunkBytes = 524288;
inline constexpr std::uint64_t kP2pNetChunkBytes = 131072;

struct ChunkInputs {
  select::Algo algo = select::Algo::ring;
  select::Proto proto = select::Proto::simple;
  std::uint64_t bytes = 0;  // NCCL's nBytes of the call
  int channels = 1;
  int nvls_heads = 1;       // NVLS: GPUs whose memory the switch reduces (local ranks)
  int tree_depth = 1;       // Tree: depth of the tree (chain inside node + log2 nodes)
  int nodes = 1;            // NVLSTree, Tree/LL128: NVLink domains the tree spans (comm->nNodes)
  int ranks_per_node = 1;   // Tree/LL128: ranks per domain (ppn)
  std::uint64_t buffer_bytes = 0;  // 0 = default_buffer_bytes(proto)
  // NVLS, NVLSTree: comm->nvlsChunkSize and NVLSTree's ceiling as the release sets them
  // (sim/select/nvls_tuning.hpp); 0 = NCCL_NVLS_CHUNKSIZE's default and, for NVLSTree, 64 KiB on
  // 4 or more domains.
  std::uint64_t nvls_chunk_bytes = 0;
  std::uint64_t nvls_tree_max_chunk_bytes = 0;
};

// User-data bytes one channel moves per chunk, following calcCollChunking: Ring/Simple uses
// stepSize * chunkSteps (4 of 8 slots), NVLS and NVLSTree start from NCCL_NVLS_CHUNKSIZE (NVLSTree
// no larger than its ceiling, NCCL_NVLSTREE_MAX_CHUNKSIZE) and shrink it for small calls,
// Tree/Simple halves it until every channel has enough chunks to fill the tree. LL and LL128
// chunks are one slot, of which wire_efficiency() is data.
double chunk_data_bytes(const ChunkInputs& in);

// How NCCL cuts the send to one peer (alltoall, sendrecv) over channels and FIFO steps
// (src/enqueue.cc addP2pToPlan / scheduleP2pTasksToPlan, src/graph/paths.cc
// ncclTopoComputeP2pChannels). The P2P chunk is NCCL_P2P_NVL_CHUNKSIZE (512 KiB) over NVLink,
// NCCL_P2P_NET_CHUNKSIZE (128 KiB) across the network.
// Share of a channel's copy rate (cap_<proto>_GBps) one direction of a send/receive gets: NCCL's
// P2P kernel gives a work's receive (w-1)/2 of its w warps and its send the rest
// (src/device/sendrecv.h), where a ring channel's warps do recv, reduce and send in one pass.
inline constexpr double kP2pDirectionShare = 0.5;
// Share of a channel's LL rate (cap_ll_GBps, what a ring channel moves) a Tree/LL channel gets.
// NCCL's own model gives Ring/LL busBw x 1/2 and Tree/LL busBw x 1/3.8 (src/graph/tuning.cc
// ncclTopoTuneModel): a tree channel's threads serve its up and down passes with the LL line's
// per-thread polling, so it moves 2 / 3.8 of a ring channel's bytes. The same shared cap then
// follows the 1-node Ring/LL sweep (dgxc, ~20 GB/s per channel) and the 2-node Tree/LL ones.
inline constexpr double kTreeLlChannelShare = 2.0 / 3.8;

struct P2pInputs {
  std::uint64_t peer_bytes = 0;  // bytes sent to one peer
  int ranks = 1;                 // ranks of the communicator
  int p2p_channels = 1;          // comm->p2pnChannels (a power of two)
  int channels_per_peer = 1;     // comm->p2pnChannelsPerPeer (a power of two)
  bool multi_node = false;       // nNodes > 1: smaller parts
  std::uint64_t chunk_bytes = kP2pNvlChunkBytes;  // FIFO slot (stepSize): sets the part sizes
  std::uint64_t chunk_data_bytes = 0;  // user data per slot (0: the whole slot, Simple; LL: half)
};
struct P2pSplit {
  int channels = 1;         // channels the peer's bytes are striped over
  std::uint64_t steps = 1;  // FIFO steps (chunks) of the largest part
};
// Parts per peer start at nChannelsMin (p2pnChannelsPerPeer halved until nChannelsMin x ranks
// fits in p2pnChannels), no more than the bytes fill with parts of chunk/8 (chunk/2 across
// nodes), and double while a part exceeds 32 chunks (1 chunk across nodes).
P2pSplit p2p_split(const P2pInputs& in);

}  // namespace commstack::sim::protocol
