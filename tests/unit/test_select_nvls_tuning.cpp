// NVLS channels and chunks per NCCL release (sim/select/nvls_tuning): the values
// src/transport/nvls.cc sets at init, worked out by hand from v2.28.9-1's defaults and
// v2.30.7-1's ncclNvlsTreeSm100Tuning, and the chunk src/enqueue.cc calcCollChunking cuts from them.
#include <doctest/doctest.h>

#include "common/error.hpp"
#include "sim/protocol/protocol.hpp"
#include "sim/select/nvls_tuning.hpp"

using namespace commstack::select;
namespace protocol = commstack::sim::protocol;

namespace {

constexpr std::uint64_t KiB = 1024;

NvlsTuning tune(NcclVersion v, int sm, int nodes, int ppn, double nic_GBps, PathType path = PathType::pix) {
  return nccl_nvls_tuning({v, sm, nodes, ppn, nic_GBps, path});
}

void check(const NvlsTuning& t, int channels, std::uint64_t chunk, std::uint64_t tree_max) {
  CHECK(t.channels == channels);
  CHECK(t.chunk_bytes == chunk);
  CHECK(t.tree_max_chunk_bytes == tree_max);
}

}  // namespace

TEST_CASE("nvls tuning: 2.28.9 fixes channels per generation and caps NVLSTree at 64 KiB from 4 domains") {
  const auto v = NcclVersion::v2_28_9;
  check(tune(v, 90, 1, 8, 0), 16, 128 * KiB, 128 * KiB);
  check(tune(v, 90, 2, 8, 48), 16, 128 * KiB, 128 * KiB);
  check(tune(v, 90, 4, 8, 48), 16, 128 * KiB, 64 * KiB);
  check(tune(v, 100, 1, 8, 0), 24, 128 * KiB, 128 * KiB);   // NVLS_NCHANNELS_SM100_NVL
  check(tune(v, 100, 2, 8, 48), 32, 128 * KiB, 128 * KiB);  // NVLS_NCHANNELS_SM100
  check(tune(v, 100, 8, 8, 96), 32, 128 * KiB, 64 * KiB);
  // 2.29.7 has the same nvls.cc defaults.
  check(tune(NcclVersion::v2_29_7, 100, 2, 8, 48), 32, 128 * KiB, 128 * KiB);
}

TEST_CASE("nvls tuning: Blackwell inside one NVLink domain runs 32 NVLS channels under 2.26, 24 from 2.27") {
  // v2.26.2-1 src/transport/nvls.cc has NVLS_NCHANNELS_SM100 32 only; v2.27.7-1 adds _NVL 24.
  check(tune(NcclVersion::v2_26_2, 100, 1, 8, 0), 32, 128 * KiB, 128 * KiB);
  check(tune(NcclVersion::v2_27_7, 100, 1, 8, 0), 24, 128 * KiB, 128 * KiB);
  check(tune(NcclVersion::v2_26_2, 100, 2, 8, 48), 32, 128 * KiB, 128 * KiB);
  check(tune(NcclVersion::v2_26_2, 90, 1, 8, 0), 16, 128 * KiB, 128 * KiB);
}

TEST_CASE(
    "nvls tuning: 2.30.7 tunes Blackwell across domains from the NIC path, ranks per domain and path type") {
  const auto v = NcclVersion::v2_30_7;
  // 400 Gb/s NICs behind Gen5 (48 GB/s), a NIC per GPU on its PCIe switch (PIX): 2 domains keep 32
  // channels with a 64 KiB ceiling, more domains drop to 24.
  check(tune(v, 100, 2, 8, 48), 32, 128 * KiB, 64 * KiB);
  check(tune(v, 100, 3, 8, 48), 24, 128 * KiB, 64 * KiB);
  check(tune(v, 100, 16, 8, 48), 24, 128 * KiB, 64 * KiB);
  // The same NICs farther from the GPU (through the CPU, PHB): 128 KiB ceilings.
  check(tune(v, 100, 2, 8, 48, PathType::phb), 32, 128 * KiB, 128 * KiB);
  check(tune(v, 100, 16, 8, 48, PathType::phb), 24, 128 * KiB, 128 * KiB);
  // 4 GPUs per domain on 2 domains: 256 KiB chunks.
  check(tune(v, 100, 2, 4, 48), 32, 256 * KiB, 256 * KiB);
  // 800 Gb/s paths (96 GB/s): 8-GPU domains 24 channels of 256 KiB; NVL72 domains 32, 64 KiB.
  check(tune(v, 100, 4, 8, 96), 24, 256 * KiB, 256 * KiB);
  check(tune(v, 100, 4, 16, 96), 32, 128 * KiB, 128 * KiB);
  check(tune(v, 100, 4, 72, 96), 32, 128 * KiB, 64 * KiB);
  check(tune(v, 100, 2, 72, 96), 32, 128 * KiB, 64 * KiB);  // 2 domains: ppn >= 16
  // A slower path matches no branch: the defaults, and the older 64 KiB rule from 4 domains.
  check(tune(v, 100, 2, 8, 24), 32, 128 * KiB, 128 * KiB);
  check(tune(v, 100, 4, 8, 24), 32, 128 * KiB, 64 * KiB);
  // Hopper and one domain are untouched.
  check(tune(v, 90, 4, 8, 48), 16, 128 * KiB, 64 * KiB);
  check(tune(v, 100, 1, 8, 0), 24, 128 * KiB, 128 * KiB);
}

TEST_CASE("nvls tuning: NCCL_MIN_CTAS / NCCL_MAX_CTAS clamp the NVLS channels") {
  NcclEnv env;
  env.max_ctas = 8;
  CHECK(nccl_nvls_tuning({NcclVersion::v2_28_9, 90, 1, 8, 0, PathType::pix}, env).channels == 8);
  env.max_ctas = 0;
  env.min_ctas = 40;
  CHECK(nccl_nvls_tuning({NcclVersion::v2_30_7, 100, 4, 8, 48, PathType::pix}, env).channels == 40);
}

TEST_CASE(
    "nvls tuning: NVLSTree's chunk starts at its ceiling and halves for smaller calls (calcCollChunking)") {
  protocol::ChunkInputs ci;
  ci.algo = Algo::nvls_tree;
  ci.proto = Proto::simple;
  ci.channels = 24;
  ci.nvls_heads = 8;  // 192 (channel, head) pairs
  ci.nodes = 4;
  ci.nvls_chunk_bytes = 256 * KiB;
  ci.nvls_tree_max_chunk_bytes = 256 * KiB;
  const std::uint64_t ops = std::uint64_t{24} * 8;
  const auto chunk_at = [&](std::uint64_t bytes) {
    ci.bytes = bytes;
    return protocol::chunk_data_bytes(ci);
  };
  CHECK(chunk_at(16 * ops * 256 * KiB) == 256.0 * KiB);      // 768 MiB: not below 16 x ops x 256 KiB
  CHECK(chunk_at(16 * ops * 256 * KiB - 1) == 128.0 * KiB);  // just below
  CHECK(chunk_at(4 * ops * 128 * KiB - 1) == 64.0 * KiB);
  CHECK(chunk_at(ops * 64 * KiB - 1) == 32.0 * KiB);
  // Without the release's values: 64 KiB from 4 domains, 128 KiB below.
  ci.nvls_chunk_bytes = ci.nvls_tree_max_chunk_bytes = 0;
  CHECK(chunk_at(std::uint64_t{1} << 30) == 64.0 * KiB);
  ci.nodes = 2;
  CHECK(chunk_at(std::uint64_t{1} << 30) == 128.0 * KiB);
}

TEST_CASE(
    "nvls tuning: NCCL_NVLS_CHUNKSIZE and NCCL_NVLSTREE_MAX_CHUNKSIZE win over the defaults and 2.30's "
    "tuning") {
  NcclEnv env;
  env.nvls_chunksize = 256 * 1024;
  env.nvlstree_max_chunksize = 32 * 1024;
  // 2.28.9 on 8 H100 nodes: the user's chunk, and the user's ceiling instead of 64 KiB.
  const NvlsTuning h100 = nccl_nvls_tuning({NcclVersion::v2_28_9, 90, 8, 8, 48, PathType::pix}, env);
  CHECK(h100.chunk_bytes == 256 * KiB);
  CHECK(h100.tree_max_chunk_bytes == 32 * KiB);
  // 2.30.7 on 16 B200 nodes: the tuning's 24 channels stay, its chunk and ceiling give way.
  const NvlsTuning b200 = nccl_nvls_tuning({NcclVersion::v2_30_7, 100, 16, 8, 48, PathType::pix}, env);
  CHECK(b200.channels == 24);
  CHECK(b200.chunk_bytes == 256 * KiB);
  CHECK(b200.tree_max_chunk_bytes == 32 * KiB);
  // Only the chunk set: the ceiling follows it below 4 domains (2.28.9's fallback).
  NcclEnv chunk_only;
  chunk_only.nvls_chunksize = 64 * 1024;
  CHECK(nccl_nvls_tuning({NcclVersion::v2_28_9, 90, 2, 8, 48, PathType::pix}, chunk_only)
            .tree_max_chunk_bytes == 64 * KiB);
}

TEST_CASE("nvls tuning: chunk sizes out of range are refused with the variable's name") {
  NcclEnv env;
  env.nvls_chunksize = -1;
  CHECK_THROWS_WITH_AS(validate(env), doctest::Contains("NCCL_NVLS_CHUNKSIZE"), commstack::InputError);
  env.nvls_chunksize = 0;
  env.nvlstree_max_chunksize = 0;
  CHECK_THROWS_WITH_AS(validate(env), doctest::Contains("NCCL_NVLSTREE_MAX_CHUNKSIZE"),
                       commstack::InputError);
}
