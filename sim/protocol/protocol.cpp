#include "sim/protocol/protocol.hpp"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack::sim::protocol {

using select::Algo;
using select::Proto;

double wire_efficiency(Proto proto) {
  switch (proto) {
    case Proto::ll: return 0.5;             // 4 B data + 4 B flag per 8 B line
    case Proto::ll128: return 120.0 / 128;  // 120 B data + 8 B flag per 128 B line
    case Proto::simple: return 1.0;
  }
  return 1.0;
}

std::uint64_t default_buffer_bytes(Proto proto) {
  switch (proto) {
    case Proto::ll: return 524288;      // 8 lines/thread x 512 threads x 8 steps x 16 B
    case Proto::ll128: return 4915200;  // 120 elems/thread x 640 threads x 8 steps x 8 B
    case Proto::simple: return 4194304;
  }
  return 4194304;
}

void check_buffer_bytes(std::uint64_t bytes, const std::string& where) {
  if (bytes < kMinBufferBytes)
    throw InputError(
        fmt::format("{}: {} bytes is too small; expected at least {} bytes (NCCL_BUFFSIZE: 8 slots of "
                    "at least one 16-byte pack; NCCL's default is 4 MiB)",
                    where, bytes, kMinBufferBytes));
}

double chunk_data_bytes(const ChunkInputs& in) {
  const std::uint64_t buff = in.buffer_bytes > 0 ? in.buffer_bytes : default_buffer_bytes(in.proto);
  const std::uint64_t step = buff / kNcclSteps;
  const bool ring_simple = in.proto == Proto::simple && in.algo == Algo::ring;
  std::uint64_t chunk = step * (ring_simple ? kNcclSteps / 2 : 1);
  const std::uint64_t ch = static_cast<std::uint64_t>(std::max(1, in.channels));
  const std::uint64_t nvls_chunk = in.nvls_chunk_bytes > 0 ? in.nvls_chunk_bytes : kNvlsChunkBytes;
  if (in.algo == Algo::nvls) {
    // Small calls get smaller chunks so every (channel, head) pair still has work.
    chunk = std::min(chunk, nvls_chunk);
    const std::uint64_t ops = ch * static_cast<std::uint64_t>(std::max(1, in.nvls_heads));
    if (in.bytes < 64 * ops * chunk && chunk > 65536) chunk = 65536;
    if (in.bytes < 8 * ops * chunk && chunk > 32768) chunk = 32768;
    if (in.bytes < 2 * ops * chunk && chunk > 16384) chunk = 16384;
  } else if (in.algo == Algo::nvls_tree) {
    // NCCL >= 2.22 (src/enqueue.cc calcCollChunking): the NVLS chunk under NVLSTree's ceiling (up
    // to 2.29 64 KiB on 4 or more nodes; 2.30 tunes both on Blackwell), halved for calls too small
    // to give every (channel, head) pair a few. Older versions started from the Simple slot
    // (512 KiB): 4x the pipeline's fill.
    const std::uint64_t ceiling = in.nvls_tree_max_chunk_bytes > 0
                                      ? in.nvls_tree_max_chunk_bytes
                                      : (in.nodes >= 4 ? std::uint64_t{65536} : nvls_chunk);
    chunk = std::min(nvls_chunk, ceiling);
    const std::uint64_t ops = ch * static_cast<std::uint64_t>(std::max(1, in.nvls_heads));
    if (in.bytes < 32 * ops * chunk && chunk > 262144) chunk = 262144;
    if (in.bytes < 16 * ops * chunk && chunk > 131072) chunk = 131072;
    if (in.bytes < 4 * ops * chunk && chunk > 65536) chunk = 65536;
    if (in.bytes < 1 * ops * chunk && chunk > 32768) chunk = 32768;
  } else if (in.algo == Algo::tree && in.proto == Proto::ll128) {
    // NCCL halves the Tree/LL128 chunk until every channel has enough of them for the tree's
    // steps (1 + log2 nodes + 0.1 ppn): 64/ppn of them down to 128 KiB, 16/ppn down to 32 KiB.
    const double ppn = std::max(1, in.ranks_per_node);
    const auto log2_nodes = std::bit_width(static_cast<unsigned>(std::max(1, in.nodes))) - 1;  // NCCL's log2i
    const double nsteps = 1 + log2_nodes + 0.1 * ppn;
    auto data = static_cast<std::uint64_t>(static_cast<double>(chunk) * wire_efficiency(in.proto));
    // Whole chunks per channel (NCCL divides integers here, then compares with a float).
    auto chunks_per_channel = [&] {
      const std::uint64_t whole = in.bytes / (ch * data);
      return static_cast<double>(whole);
    };
    while (chunks_per_channel() < nsteps * 64 / ppn && data > 131072) data /= 2;
    while (chunks_per_channel() < nsteps * 16 / ppn && data > 32768) data /= 2;
    return static_cast<double>(data);
  } else if (in.algo == Algo::tree && in.proto == Proto::simple) {
    const std::uint64_t depth = static_cast<std::uint64_t>(std::max(1, in.tree_depth));
    while (in.bytes / (ch * chunk) < depth * 8 && chunk > 131072) chunk /= 2;
    while (in.bytes / (ch * chunk) < depth * 4 && chunk > 65536) chunk /= 2;
    while (in.bytes / (ch * chunk) < depth && chunk > 32768) chunk /= 2;
  }
  return static_cast<double>(chunk) * wire_efficiency(in.proto);
}

P2pSplit p2p_split(const P2pInputs& in) {
  P2pSplit out;
  const int ch_max = std::max(1, in.channels_per_peer);
  int ch_min = ch_max;
  while (ch_min * in.ranks > in.p2p_channels && ch_min > 1) ch_min /= 2;
  const std::uint64_t chunk = std::max<std::uint64_t>(1, in.chunk_bytes);
  const std::uint64_t min_part = in.multi_node ? chunk / 2 : chunk / 8;
  const std::uint64_t max_part = in.multi_node ? chunk : chunk * 32;
  const std::uint64_t b = std::max<std::uint64_t>(1, in.peer_bytes);
  auto div_up = [](std::uint64_t a, std::uint64_t d) { return (a + d - 1) / d; };
  int ch = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(ch_min), div_up(b, min_part)));
  ch = std::max(1, ch);
  std::uint64_t part = std::max(min_part, div_up(b, static_cast<std::uint64_t>(ch)));
  while (part > max_part && ch <= ch_max / 2) {
    ch *= 2;
    part = div_up(b, static_cast<std::uint64_t>(ch));
  }
  out.channels = ch;
  const std::uint64_t data = in.chunk_data_bytes > 0 ? in.chunk_data_bytes : chunk;
  out.steps = div_up(div_up(b, static_cast<std::uint64_t>(ch)), data);
  return out;
}

}  // namespace commstack::sim::protocol
