// Stack model: the protocol layer's fixed numbers, NCCL's chunking, the layer breakdown (adds up
// exactly), closed forms of the bandwidth terms, and NCCL's choices on real logs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include <doctest/doctest.h>

#include "approx.hpp"

#include "calibration/fit/nccl_log.hpp"
#include "common/error.hpp"
#include "sim/protocol/protocol.hpp"
#include "sim/select/nccl_search.hpp"
#include "sim/select/nccl_trees.hpp"
#include "sim/stack/predict.hpp"
#include "sim/stack/profile.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;
using sim::CollectiveOp;
using sim::stack::Param;
using sim::stack::Predictor;
using sim::stack::Profile;
using select::Algo;
using select::Proto;

namespace {
// NCCL's prior for compute capability `sm` with some parameters set, to isolate one term.
Profile prior_with(int sm, std::initializer_list<std::pair<Param, double>> values) {
  Profile prof = sim::stack::prior_profile(sm);
  for (const auto& [param, value] : values) prof.at(param) = value;
  return prof;
}
}  // namespace

TEST_CASE("stack: protocol wire efficiency is fixed by the line format") {
  CHECK(sim::protocol::wire_efficiency(Proto::ll) == 0.5);
  CHECK(sim::protocol::wire_efficiency(Proto::ll128) == 120.0 / 128.0);
  CHECK(sim::protocol::wire_efficiency(Proto::simple) == 1.0);
  CHECK(sim::protocol::default_buffer_bytes(Proto::simple) == 4u << 20);
}

TEST_CASE("stack: NCCL chunk sizes (calcCollChunking)") {
  sim::protocol::ChunkInputs in;
  in.algo = Algo::ring;
  in.proto = Proto::simple;
  in.bytes = 1u << 30;
  in.channels = 16;
  CHECK(sim::protocol::chunk_data_bytes(in) == 2u << 20);  // 4 MiB / 8 slots x 4 chunk steps
  in.proto = Proto::ll;
  CHECK(sim::protocol::chunk_data_bytes(in) == 32768);  // 64 KiB slot, half of it data
  // NVLS, 16 channels x 8 heads = 128 concurrent ops: 128 KiB chunks only at >= 1 GiB.
  in.algo = Algo::nvls;
  in.proto = Proto::simple;
  in.nvls_heads = 8;
  in.bytes = 1u << 30;
  CHECK(sim::protocol::chunk_data_bytes(in) == 131072);
  in.bytes = (1u << 30) - 1;
  CHECK(sim::protocol::chunk_data_bytes(in) == 65536);
  in.bytes = 32u << 20;  // < 8 x 128 x 64 KiB
  CHECK(sim::protocol::chunk_data_bytes(in) == 32768);
  in.bytes = 4u << 20;  // < 2 x 128 x 32 KiB
  CHECK(sim::protocol::chunk_data_bytes(in) == 16384);
  // Tree/LL128 on 16 nodes x 8 GPUs, 16 channels: 1 + log2 16 + 0.1 x 8 = 5.8 tree steps; a slot
  // holds 614400 B, 576000 of data. 1 GiB: 116 chunks per channel, >= 5.8 x 64 / 8: kept. 8 MiB:
  // halved to 72000 (not above 128 KiB), then to 36000 (14 chunks per channel >= 5.8 x 16 / 8).
  in.algo = Algo::tree;
  in.proto = Proto::ll128;
  in.nodes = 16;
  in.ranks_per_node = 8;
  in.bytes = 1u << 30;
  CHECK(sim::protocol::chunk_data_bytes(in) == 576000);
  in.bytes = 8u << 20;
  CHECK(sim::protocol::chunk_data_bytes(in) == 36000);
}

TEST_CASE("stack: layers add up to the total exactly") {
  const auto spec = topologies::load_cluster("dgx-h100");
  const Profile prof = sim::stack::prior_profile(90);
  Predictor pr(spec, 2, 8);
  for (CollectiveOp op : {CollectiveOp::allreduce, CollectiveOp::allgather, CollectiveOp::reducescatter,
                          CollectiveOp::alltoall, CollectiveOp::broadcast, CollectiveOp::sendrecv}) {
    for (std::uint64_t bytes : {8ull, 4096ull, 1ull << 20, 64ull << 20, 4ull << 30}) {
      const auto p = pr.predict(op, bytes, prof);
      const auto& b = p.breakdown;
      CAPTURE(sim::to_string(op));
      CAPTURE(bytes);
      CHECK(p.time_s == b.launch_s + b.algorithm_latency_s + b.fabric_latency_s + b.fabric_bandwidth_s + b.transport_s +
                            b.protocol_s + b.contention_s);
      // Back-to-back calls: the launch layer is the kernel's fixed cost plus the host time the
      // device time does not hide.
      const double kernel = prof[Param::kernel_us] * 1e-6;
      const double device = kernel + b.algorithm_latency_s + b.fabric_latency_s + b.fabric_bandwidth_s + b.transport_s +
                            b.protocol_s + b.contention_s;
      CHECK(b.launch_s == approx(kernel + std::max(0.0, prof[Param::launch_us] * 1e-6 - device)));
      CHECK(p.time_s >= prof[Param::launch_us] * 1e-6 * (1 - 1e-12));
      CHECK(b.fabric_bandwidth_s > 0);
      CHECK(b.transport_s >= 0);  // efficiencies <= 1 can only slow down
      CHECK(b.protocol_s >= 0);
      CHECK(b.contention_s == 0);
    }
  }
}

TEST_CASE("stack: ring bandwidth terms match the closed form") {
  // One DGX H100, Ring/Simple forced: the bus bytes 2(n-1)/n S cross each GPU's 450 GB/s NVLink.
  const auto spec = topologies::load_cluster("dgx-h100");
  Profile prof = sim::stack::prior_profile(90);
  prof.at(Param::cap_simple_GBps) = 1000;  // no per-channel cap: transport is the limit
  sim::stack::Knobs knobs;
  knobs.env.algo = "ring";
  knobs.env.proto = "simple";
  Predictor pr(spec, 1, 8, knobs);
  const std::uint64_t S = 1ull << 30;
  const auto p = pr.predict(CollectiveOp::allreduce, S, prof);
  CHECK(p.algorithm == "Ring");
  CHECK(p.proto == Proto::simple);
  const double bus = S * 2.0 * 7 / 8;
  CHECK(p.breakdown.fabric_bandwidth_s == approx(bus / 450e9).epsilon(1e-12));
  CHECK(p.breakdown.transport_s ==
        approx(bus / (450e9 * prof[Param::eta_nvlink]) - bus / 450e9).epsilon(1e-9));
  // 14 ring steps inside the node, each NCCL's whole Simple step latency: the GPU-NVSwitch-GPU
  // route (0.6 us) in the fabric layer, the rest in the algorithm layer.
  CHECK(p.breakdown.algorithm_latency_s == approx(14 * (prof[Param::lat_nvlink_simple_us] - 0.6) * 1e-6));
  CHECK(p.breakdown.fabric_latency_s == approx(14 * 0.6e-6));
  CHECK(p.busbw_line_GBps == approx(450));
}

TEST_CASE(
    "stack: NCCL_BUFFSIZE below one 16-byte pack per slot is refused, the smallest one has finite time") {
  CHECK_THROWS_AS(sim::protocol::check_buffer_bytes(0, "--buffsize"), InputError);
  CHECK_THROWS_WITH(sim::protocol::check_buffer_bytes(127, "--buffsize"),
                    doctest::Contains("--buffsize: 127 bytes is too small; expected at least 128 bytes"));
  CHECK_NOTHROW(sim::protocol::check_buffer_bytes(128, "--buffsize"));
  // 128 B: 16-byte slots, a Ring/Simple chunk of 4 slots = 64 B per channel step. 1 MiB over 16
  // ranks and 16 channels is 4 KiB per rank and channel: 64 chunk loops of 30 steps each.
  const auto spec = topologies::load_cluster("dgx-h100");
  const Profile prof = sim::stack::prior_profile(90);
  sim::stack::Knobs knobs;
  knobs.env.algo = "ring";
  knobs.env.proto = "simple";
  const auto def = Predictor(spec, 2, 8, knobs).predict(CollectiveOp::allreduce, 1u << 20, prof);
  knobs.buffsize = sim::protocol::kMinBufferBytes;
  const auto tiny = Predictor(spec, 2, 8, knobs).predict(CollectiveOp::allreduce, 1u << 20, prof);
  CHECK(tiny.chunk_bytes == 64);
  CHECK(std::isfinite(tiny.time_s));
  CHECK(tiny.time_s > 4 * def.time_s);  // every loop pays its steps' latencies again
}

TEST_CASE("stack: two-node ring is bounded by the NICs, tree on two nodes by half of that traffic") {
  const auto spec = topologies::load_cluster("dgx-h100");
  const Profile prof = sim::stack::prior_profile(90);
  sim::stack::Knobs ring;
  ring.env.algo = "ring";
  ring.env.proto = "simple";
  const auto pr = Predictor(spec, 2, 8, ring).predict(CollectiveOp::allreduce, 1ull << 32, prof);
  CHECK(pr.busbw_line_GBps == approx(8 * 50.0));  // 8 NDR NICs per node, line rate
  sim::stack::Knobs tree;
  tree.env.algo = "tree";
  tree.env.proto = "simple";
  const auto pt = Predictor(spec, 2, 8, tree).predict(CollectiveOp::allreduce, 1ull << 32, prof);
  CHECK(pt.algorithm == "Tree");
  // Two nodes: each node sends S once per direction vs 2(n-1)/n S for ring -> bus bound x 2(n-1)/n,
  // but the intra-node chain (2 S per GPU over 450 GB/s) binds first.
  CHECK(pt.busbw_line_GBps == approx(std::min(400.0 * 30 / 16, 450.0 * 15 / 16)));
  // With NVLink slower than the NICs (100 GB/s per GPU) the ring's NVLink hops bind: each GPU sends
  // 7/8 of the ring's bytes over NVLink (one hop in eight leaves the node, from a different GPU per
  // channel).
  auto slow = spec;
  slow.node.gpu_link_bandwidth_Bps = 100e9;
  const auto pf = Predictor(slow, 2, 8, ring).predict(CollectiveOp::allreduce, 1ull << 32, prof);
  CHECK(pf.busbw_line_GBps == approx(100.0 * 8 / 7));
  // One node: every hop is NVLink.
  const auto p1 = Predictor(spec, 1, 8, ring).predict(CollectiveOp::allreduce, 1ull << 32, prof);
  CHECK(p1.busbw_line_GBps == approx(450.0));
}

TEST_CASE("stack: the B300 presets keep B200's NVLink and double its NIC bound (800 Gb/s ConnectX-8)") {
  // Same GPU generation (the B200 profile), same NVLink5; only the NICs differ.
  const Profile prof = sim::stack::prior_profile(100);
  sim::stack::Knobs ring;
  ring.env.algo = "ring";
  ring.env.proto = "simple";
  const auto b200 = topologies::load_cluster("hgx-b200");
  const auto b300 = topologies::load_cluster("hgx-b300");
  const auto two200 = Predictor(b200, 2, 8, ring).predict(CollectiveOp::allreduce, 1ull << 34, prof);
  const auto two300 = Predictor(b300, 2, 8, ring).predict(CollectiveOp::allreduce, 1ull << 34, prof);
  CHECK(two200.busbw_line_GBps == approx(8 * 50.0));   // 8 x 400 Gb/s per node
  CHECK(two300.busbw_line_GBps == approx(8 * 100.0));  // 8 x 800 Gb/s per node
  const auto one200 = Predictor(b200, 1, 8, ring).predict(CollectiveOp::allreduce, 1ull << 34, prof);
  const auto one300 = Predictor(b300, 1, 8, ring).predict(CollectiveOp::allreduce, 1ull << 34, prof);
  CHECK(one300.busbw_line_GBps == approx(one200.busbw_line_GBps));
  CHECK(one300.busbw_line_GBps == approx(900.0));
  // GB300 NVL72: one NVLink domain of 72 GPUs, like GB200, with one 800 Gb/s NIC per GPU.
  const Predictor gb300(topologies::load_cluster("gb300-nvl72"), 36, 4);
  CHECK(gb300.geometry().nccl_nodes == 2);
  CHECK(gb300.geometry().local_ranks == 72);
  CHECK(gb300.geometry().nic_gpu_Bps == approx(100e9));
}

TEST_CASE("stack: NVLink domain of GB200 NVL72 is one NCCL node") {
  const auto spec = topologies::load_cluster("gb200-nvl72");
  Predictor pr(spec, 18, 4);
  CHECK(pr.geometry().nccl_nodes == 1);
  CHECK(pr.geometry().local_ranks == 72);
  CHECK(pr.shape().nvls_support);
}

TEST_CASE("stack: selection matches NCCL's choices in the nccl#1453 H100 3-node log") {
  // 3 nodes of 8 H100 with a 200 Gb/s ConnectX per GPU (posted topo XML). The channels and
  // per-channel bandwidths come from comm_shape()'s derivation, not from the log.
  auto spec = topologies::load_cluster("dgx-h100");
  for (auto& nic : spec.node.nics) nic.bandwidth_Bps = 25e9;
  const auto log = fit::parse_nccl_log_file(std::string(COMMSTACK_SOURCE_DIR) +
                                            "/calibration/data/nccl-logs/nccl-1453-h100-3node-tuning-selection-excerpts.log",
                                            {true});
  REQUIRE(log.choices.size() == 11);
  Predictor pr(spec, 3, 8);
  // NCCL's search (sim/select/nccl_search): one channel per 25 GB/s NIC at 24 GB/s (NCCL's speed
  // step), doubled for the communicator: the log's "Channel 00/16".
  CHECK(pr.shape().ring.n_channels == 8);
  CHECK(pr.shape().tree.bw_inter == 24.0);
  CHECK(pr.shape().n_channels == 16);
  int match = 0;
  for (const auto& c : log.choices) {
    const auto choice = pr.choose(CollectiveOp::allreduce, c.bytes);
    CAPTURE(c.bytes);
    CHECK(select::key(choice.algo) == c.algo);
    CHECK(select::key(choice.proto) == c.proto);
    match += select::key(choice.algo) == c.algo && select::key(choice.proto) == c.proto;
    // NCCL's own time estimate for its choice, printed in the log (the number the tuner minimises):
    // the latency part matches to 0.1%, the bandwidth part within 2% (the log's NCCL is <= 2.22,
    // the tuner's constants are 2.28's: 256 KiB Tree/LL128 53.8 vs 54.7 us).
    REQUIRE(c.model_time_us);
    CHECK(choice.nccl_model_us == approx(*c.model_time_us).epsilon(0.02));
    if (c.bytes <= 512) CHECK(choice.nccl_model_us == approx(*c.model_time_us).epsilon(1e-3));
  }
  CHECK(match == 11);
}

TEST_CASE("stack: back-to-back calls cost the larger of host and device time") {
  // nccl-tests times a loop of calls on one stream: the host enqueues the next call while the GPU
  // runs this one. 8 B on one DGX H100 node: kernel + 14 Ring/LL steps, each NCCL's whole step
  // latency with the 0.6 us route inside it (at least the route) < the host time.
  const auto spec = topologies::load_cluster("dgx-h100");
  Profile prof = sim::stack::prior_profile(90);
  prof.at(Param::launch_us) = 30;
  prof.at(Param::kernel_us) = 5;
  sim::stack::Knobs knobs;
  knobs.env.algo = "ring";
  knobs.env.proto = "ll";
  Predictor pr(spec, 1, 8, knobs);
  const auto small = pr.predict(CollectiveOp::allreduce, 8, prof);
  const double device = 14 * std::max(prof[Param::lat_nvlink_ll_us], 0.6) * 1e-6;
  CHECK(small.breakdown.algorithm_latency_s + small.breakdown.fabric_latency_s == approx(device));
  CHECK(small.time_s == approx(30e-6));  // host-bound: exactly the launch time
  CHECK(small.breakdown.launch_s == approx(30e-6 - device).epsilon(1e-3));  // bandwidth terms of 8 B ~ 0
  // 1 GiB: the device time exceeds the host time, only the kernel's fixed cost remains.
  const auto large = pr.predict(CollectiveOp::allreduce, 1ull << 30, prof);
  CHECK(large.breakdown.launch_s == approx(5e-6));
  CHECK(large.time_s > 30e-6);
}

TEST_CASE("stack: one host thread driving G GPUs (nccl-tests -g G) pays G launches per call") {
  // The Modal A100 run (nccl-tests -g 8, one thread) sits on a 55 us floor where -g 1 runs of the
  // same GPU sit near 10-20 us: the thread launches one kernel per communicator in each group.
  const auto spec = topologies::load_cluster("dgx-a100");
  Profile prof = sim::stack::prior_profile(80);
  prof.at(Param::launch_us) = 7;
  prof.at(Param::kernel_us) = 5;
  sim::stack::Knobs one;
  sim::stack::Knobs eight;
  eight.gpus_per_thread = 8;
  const auto p1 = Predictor(spec, 1, 8, one).predict(CollectiveOp::allreduce, 8, prof);
  const auto p8 = Predictor(spec, 1, 8, eight).predict(CollectiveOp::allreduce, 8, prof);
  // -g 1: device-bound (kernel + 14 Ring/LL steps > one 7 us launch); -g 8: exactly 8 launches.
  CHECK(p1.time_s > 7e-6);
  CHECK(p1.breakdown.launch_s == approx(5e-6));
  CHECK(p8.time_s == approx(56e-6));
  CHECK(p8.time_s == p8.breakdown.total_s());
  // Large sizes are device-bound either way: the host thread is hidden.
  const auto l1 = Predictor(spec, 1, 8, one).predict(CollectiveOp::allreduce, 1ull << 30, prof);
  const auto l8 = Predictor(spec, 1, 8, eight).predict(CollectiveOp::allreduce, 1ull << 30, prof);
  CHECK(l8.time_s == l1.time_s);
  // Replayed from a CUDA graph (nccl-tests -G): no call waits on the host, -g 8 or not.
  sim::stack::Knobs graph = eight;
  graph.cuda_graph = true;
  const auto g8 = Predictor(spec, 1, 8, graph).predict(CollectiveOp::allreduce, 8, prof);
  CHECK(g8.breakdown.launch_s == approx(5e-6));
  CHECK(g8.time_s == approx(p1.time_s));
  // A thread cannot drive more GPUs than its node has.
  sim::stack::Knobs nine;
  nine.gpus_per_thread = 9;
  CHECK_THROWS_WITH_AS(Predictor(spec, 1, 8, nine), doctest::Contains("--gpus-per-thread: expected 1..8"),
                       InputError);
}

TEST_CASE("stack: alltoall across nodes is bounded by each NIC's share and serialises the remote peers") {
  // 2 x 8 H100 with one 400 Gb/s NIC per GPU: each NIC carries the (n-g)/n = 8/16 of S its GPU
  // sends off the node, so the bus bandwidth bound is 15/8 NICs (sjeaugey, nccl-tests#130: "2x"
  // on 2 nodes, down to 1x with more); the 8 remote peers cost one network step and 7 more posts.
  const auto spec = topologies::load_cluster("dgx-h100");
  const Profile prof = sim::stack::prior_profile(90);
  Predictor pr(spec, 2, 8);
  const auto p = pr.predict(CollectiveOp::alltoall, 4ull << 30, prof);
  CHECK(p.algorithm == "P2P");
  CHECK(p.proto == Proto::simple);
  CHECK(p.busbw_line_GBps == approx(50.0 * 15 / 8));
  const double bus = (4ull << 30) * 15.0 / 16;
  CHECK(p.breakdown.fabric_bandwidth_s == approx((4ull << 30) * 8.0 / 16 / 50e9));
  CHECK(p.breakdown.fabric_bandwidth_s == approx(bus / (50e9 * 15 / 8)));
  // 16 nodes: 120 of 128 GPUs' share leaves the node, the bound tends to one NIC (127/120).
  const auto q = Predictor(spec, 16, 8).predict(CollectiveOp::alltoall, 4ull << 30, prof);
  CHECK(q.busbw_line_GBps == approx(50.0 * 127 / 120));
  // The NVLink step is NCCL's whole step, its 0.6 us route in the fabric layer.
  CHECK(p.breakdown.algorithm_latency_s ==
        approx((prof[Param::lat_nvlink_simple_us] - 0.6 + prof[Param::lat_net_simple_us] +
                7 * prof[Param::lat_net_ll_us]) *
               1e-6));
  // Inside one node the NVLink bound is unchanged: (g-1)/n of S per GPU over 450 GB/s.
  const auto one = Predictor(spec, 1, 8).predict(CollectiveOp::alltoall, 4ull << 30, prof);
  CHECK(one.busbw_line_GBps == approx(450.0));
}

TEST_CASE("stack: NCCL's per-peer P2P split (addP2pToPlan)") {
  // 8 ranks on 32 P2P channels, up to 32 per peer: nChannelsMin = 4 (4 x 8 fills the 32 channels).
  sim::protocol::P2pInputs in;
  in.ranks = 8;
  in.p2p_channels = 32;
  in.channels_per_peer = 32;
  in.peer_bytes = 2u << 20;  // 4 parts of 512 KiB: one chunk each
  auto s = sim::protocol::p2p_split(in);
  CHECK(s.channels == 4);
  CHECK(s.steps == 1);
  in.peer_bytes = 128u << 10;  // parts of at least chunk / 8 = 64 KiB: 2 channels
  s = sim::protocol::p2p_split(in);
  CHECK(s.channels == 2);
  CHECK(s.steps == 1);
  in.peer_bytes = 128u << 20;  // 4 parts of 32 MiB > 32 chunks: doubled to 8 parts of 16 MiB
  s = sim::protocol::p2p_split(in);
  CHECK(s.channels == 8);
  CHECK(s.steps == 32);
  // sendrecv on 16 channels, 8 ranks: nChannelsMin = 2, doubled while a part exceeds 16 MiB and
  // the count may still double (<= 16 / 2): 2 -> 4 -> 8 -> 16 for 1 GiB, parts of 64 MiB.
  in.p2p_channels = 16;
  in.channels_per_peer = 16;
  in.peer_bytes = 1ull << 30;
  s = sim::protocol::p2p_split(in);
  CHECK(s.channels == 16);
  CHECK(s.steps == 128);
  // Across nodes parts are chunk / 2 .. chunk (128 KiB NET chunk): 1 MiB on 16 ranks, 32 channels.
  in.ranks = 16;
  in.p2p_channels = 32;
  in.channels_per_peer = 2;
  in.multi_node = true;
  in.chunk_bytes = 131072;
  in.peer_bytes = 1u << 20;
  s = sim::protocol::p2p_split(in);
  CHECK(s.channels == 2);
  CHECK(s.steps == 4);
}

TEST_CASE("stack: P2P Simple inside a node pays one more chunk time per part (two-copy pipeline)") {
  // One HGX B200, alltoall of 16 MiB: 2 MiB per peer in 4 parts of one 512 KiB chunk, so the
  // pipeline of sender and receiver copies takes 2 chunk times: the protocol layer adds the
  // bandwidth time once more. No per-channel cap, no FIFO sync, to see the term alone.
  const auto spec = topologies::load_cluster("hgx-b200");
  const Profile prof = prior_with(100, {{Param::cap_simple_GBps, 2000}, {Param::chunk_sync_us, 0}});
  Predictor pr(spec, 1, 8);
  const auto p = pr.predict(CollectiveOp::alltoall, 16ull << 20, prof);
  CHECK(p.algorithm == "P2P");
  CHECK(p.proto == Proto::simple);
  CHECK(p.channels == 32);  // 4 channels per peer x 8 peers
  const auto& b = p.breakdown;
  CHECK(b.protocol_s == approx(b.fabric_bandwidth_s + b.transport_s).epsilon(1e-9));
  // 1 GiB: 128 MiB per peer in 8 parts of 32 chunks: 1/32 more.
  const auto q = pr.predict(CollectiveOp::alltoall, 1ull << 30, prof);
  CHECK(q.breakdown.protocol_s ==
        approx((q.breakdown.fabric_bandwidth_s + q.breakdown.transport_s) / 32).epsilon(1e-9));
}

TEST_CASE("stack: send/receive uses LL up to p2pnChannelsPerPeer x 16 KiB per peer (addP2pToPlan)") {
  // One HGX B200 (NVSwitch: every channel may serve a peer, 32): LL up to 512 KiB per peer, so an
  // alltoall of 8 ranks is LL up to 4 MiB (the Vultr sweep's 4 MiB point is slower than its 8 MiB
  // one). Two nodes: NCCL gives a send/receive connection over the network no LL buffer unless
  // NCCL_ALLOC_P2P_NET_LL_BUFFERS=1 (src/transport/net.cc sendProxyConnect / recvProxyConnect add
  // buffs[NCCL_PROTO_LL] only `if (proxyState->allocP2pNetLLBuffers)`; src/init.cc sets it from the
  // param, default 0), and addP2pToPlan (src/enqueue.cc) takes LL only where
  // `conn->conn.buffs[NCCL_PROTO_LL] != nullptr`: the remote peers run Simple at any size. With the
  // knob, a peer across the network allows 2 channels, LL up to 32 KiB per peer.
  const auto spec = topologies::load_cluster("hgx-b200");
  const Profile prof = sim::stack::prior_profile(100);
  Predictor one(spec, 1, 8);
  const auto ll = one.predict(CollectiveOp::alltoall, 4ull << 20, prof);
  CHECK(ll.proto == Proto::ll);
  CHECK(ll.channels == 32);  // 512 KiB per peer: 4 parts (nChannelsMin) of 4 LL slots each, 8 peers
  CHECK(one.predict(CollectiveOp::alltoall, 8ull << 20, prof).proto == Proto::simple);
  // 8 KiB per peer fills one 8 KiB part (an LL slot / 8): 8 channels for the 8 peers.
  CHECK(one.predict(CollectiveOp::alltoall, 64ull << 10, prof).channels == 8);
  CHECK(one.predict(CollectiveOp::sendrecv, 512ull << 10, prof).proto == Proto::ll);
  CHECK(one.predict(CollectiveOp::sendrecv, (512ull << 10) + 4, prof).proto == Proto::simple);
  Predictor two(spec, 2, 8);
  CHECK(two.predict(CollectiveOp::alltoall, 16 * (1ull << 10), prof).proto == Proto::simple);
  CHECK(two.predict(CollectiveOp::alltoall, 16 * (32ull << 10), prof).proto == Proto::simple);
  sim::stack::Knobs net_ll;
  net_ll.env.alloc_p2p_net_ll_buffers = true;
  Predictor two_ll(spec, 2, 8, net_ll);
  CHECK(two_ll.predict(CollectiveOp::alltoall, 16 * (32ull << 10), prof).proto == Proto::ll);
  CHECK(two_ll.predict(CollectiveOp::alltoall, 16 * (64ull << 10), prof).proto == Proto::simple);
}

TEST_CASE(
    "stack: from NCCL 2.29 send/receive uses LL only while the Simple split's channels hold 16 KiB each") {
  // 2.29.2 moved the LL test after the Simple split (src/enqueue.cc addP2pToPlan): a peer's bytes
  // go to min(nChannelsMin, bytes / (512 KiB / 8)) channels, so up to 64 KiB it is one channel
  // and LL stops at 16 KiB per peer; 2.28.9 allowed 32 channels x 16 KiB.
  const auto spec = topologies::load_cluster("hgx-b200");
  const Profile prof = sim::stack::prior_profile(100);
  sim::stack::Knobs v229;
  v229.nccl_version = select::NcclVersion::v2_29_7;
  Predictor old_rule(spec, 1, 8);
  Predictor new_rule(spec, 1, 8, v229);
  CHECK(old_rule.predict(CollectiveOp::sendrecv, 256ull << 10, prof).proto == Proto::ll);
  CHECK(new_rule.predict(CollectiveOp::sendrecv, 256ull << 10, prof).proto == Proto::simple);
  CHECK(new_rule.predict(CollectiveOp::sendrecv, 16ull << 10, prof).proto == Proto::ll);
  CHECK(new_rule.predict(CollectiveOp::sendrecv, (16ull << 10) + 4, prof).proto == Proto::simple);
  // Across nodes the parts are 64 KiB (NCCL_P2P_NET_CHUNKSIZE / 2): 32 KiB per peer is one channel.
  // That only matters with NCCL_ALLOC_P2P_NET_LL_BUFFERS=1: without it a network peer has no LL
  // buffer and runs Simple (src/transport/net.cc, src/enqueue.cc addP2pToPlan).
  Predictor two(spec, 2, 8, v229);
  CHECK(two.predict(CollectiveOp::alltoall, 16 * (16ull << 10), prof).proto == Proto::simple);
  sim::stack::Knobs v229_ll = v229;
  v229_ll.env.alloc_p2p_net_ll_buffers = true;
  Predictor two_ll(spec, 2, 8, v229_ll);
  CHECK(two_ll.predict(CollectiveOp::alltoall, 16 * (16ull << 10), prof).proto == Proto::ll);
  CHECK(two_ll.predict(CollectiveOp::alltoall, 16 * (32ull << 10), prof).proto == Proto::simple);
}

TEST_CASE("stack: send/receive across nodes runs Simple: NCCL gives network peers no LL buffer") {
  // NCCL 2.14 onwards: a P2P connection over the network (net transport, connIndex 1, shared
  // buffers) gets buffs[NCCL_PROTO_LL] only when NCCL_ALLOC_P2P_NET_LL_BUFFERS=1
  // (src/transport/net.cc sendProxyConnect / recvProxyConnect; src/init.cc
  // comm->allocP2pNetLLBuffers = ncclParamAllocP2pNetLLBuffers() == 1), and addP2pToPlan
  // (src/enqueue.cc) keeps LL only where `conn->conn.buffs[NCCL_PROTO_LL] != nullptr`. A peer inside
  // the node (P2P/NVLink transport, all protocols' buffers) keeps the NCCL_P2P_LL_THRESHOLD rule.
  const Profile prof = sim::stack::prior_profile(90);
  const auto spec = topologies::load_cluster("dgx-h100");
  for (const auto version : {select::NcclVersion::v2_28_9, select::NcclVersion::v2_29_7}) {
    CAPTURE(select::to_string(version));
    sim::stack::Knobs knobs;
    knobs.nccl_version = version;
    const Predictor intra(spec, 1, 8, knobs);
    const Predictor cross(spec, 2, 8, knobs);
    const Predictor pair(spec, 2, 1, knobs);  // one GPU per node: the only peer is remote
    CHECK(intra.predict(CollectiveOp::sendrecv, 1ull << 10, prof).proto == Proto::ll);
    CHECK(cross.predict(CollectiveOp::sendrecv, 1ull << 10, prof).proto == Proto::simple);
    CHECK(pair.predict(CollectiveOp::sendrecv, 1ull << 10, prof).proto == Proto::simple);
    CHECK(cross.predict(CollectiveOp::alltoall, 16ull << 10, prof).proto == Proto::simple);
    // NCCL_ALLOC_P2P_NET_LL_BUFFERS=1 restores LL; so does NCCL_NET_SHARED_BUFFERS=0 (dedicated
    // buffers of every protocol, src/transport/net.cc: `for (p ...) ... buffs[p]` when !shared).
    sim::stack::Knobs alloc = knobs;
    alloc.env.alloc_p2p_net_ll_buffers = true;
    sim::stack::Knobs unshared = knobs;
    unshared.env.net_shared_buffers = 0;
    for (const auto& k : {alloc, unshared}) {
      const auto ll = Predictor(spec, 2, 8, k).predict(CollectiveOp::sendrecv, 1ull << 10, prof);
      CHECK(ll.proto == Proto::ll);
      CHECK(Predictor(spec, 2, 1, k).predict(CollectiveOp::sendrecv, 1ull << 10, prof).proto == Proto::ll);
      CHECK(Predictor(spec, 2, 8, k).predict(CollectiveOp::sendrecv, 32ull << 20, prof).proto ==
            Proto::simple);
      // LL's lower latency: the small call is faster than on Simple.
      CHECK(ll.time_s < cross.predict(CollectiveOp::sendrecv, 1ull << 10, prof).time_s);
    }
    // The knob does not touch a peer inside the node.
    CHECK(Predictor(spec, 1, 8, alloc).predict(CollectiveOp::sendrecv, 1ull << 10, prof).time_s ==
          intra.predict(CollectiveOp::sendrecv, 1ull << 10, prof).time_s);
  }
  CHECK_FALSE(select::p2p_net_ll_buffers(select::NcclEnv{}));
}

TEST_CASE("stack: a P2P channel gives each direction half its copy rate, a ring channel all of it") {
  // One DGX A100 with a 10 GB/s per-channel Simple cap well below NVLink (eta 1): a ring
  // all-gather's channels reach the cap, a sendrecv's channels half of it (NCCL's P2P kernel
  // splits a channel's warps between the send and the receive, src/device/sendrecv.h).
  const auto spec = topologies::load_cluster("dgx-a100");
  const Profile prof = prior_with(80, {{Param::eta_nvlink, 1.0}, {Param::cap_simple_GBps, 10}});
  Predictor pr(spec, 1, 8);
  const auto ring = pr.predict(CollectiveOp::allgather, 1ull << 30, prof);
  REQUIRE(ring.algorithm == "Ring");
  REQUIRE(ring.proto == Proto::simple);
  CHECK(ring.busbw_achievable_GBps == approx(10.0 * ring.channels));
  const auto p2p = pr.predict(CollectiveOp::sendrecv, 1ull << 30, prof);
  REQUIRE(p2p.algorithm == "P2P");
  REQUIRE(p2p.proto == Proto::simple);
  CHECK(p2p.busbw_achievable_GBps == approx(0.5 * 10.0 * p2p.channels));
}

TEST_CASE(
    "stack: NVLS pays one loop through every pipeline stage but the slowest (reduce, network hops, "
    "multicast)") {
  // One DGX H100, NVLS all-reduce: a loop is 16 channels x 8 heads x chunk. At 1 GiB the chunk is
  // 128 KiB (16 MiB loops: 1/64 of the call), at 512 MiB 64 KiB (8 MiB loops: also 1/64); at
  // 8 MiB (32 KiB chunks, 4 MiB loops) a half. No per-channel cap, no FIFO sync, to see the term.
  const auto spec = topologies::load_cluster("dgx-h100");
  Profile prof = sim::stack::prior_profile(90);
  prof.at(Param::cap_simple_GBps) = 2000;
  prof.at(Param::chunk_sync_us) = 0;
  sim::stack::Knobs knobs;
  knobs.env.algo = "nvls";
  Predictor pr(spec, 1, 8, knobs);
  for (const auto& point :
       {std::pair{1ull << 30, 1.0 / 64}, std::pair{512ull << 20, 1.0 / 64}, std::pair{8ull << 20, 1.0 / 2}}) {
    const auto bytes = point.first;  // not a structured binding: CAPTURE's lambda (clang < 16)
    const double fraction = point.second;
    CAPTURE(bytes);
    const auto p = pr.predict(CollectiveOp::allreduce, bytes, prof);
    CHECK(p.algorithm == "NVLS");
    const auto& b = p.breakdown;
    CHECK(b.protocol_s == approx(fraction * (b.fabric_bandwidth_s + b.transport_s)).epsilon(1e-9));
  }
  // Two nodes, NVLSTree: a network hop up and one down between the reduction and the multicast,
  // 4 stages. 1 GiB: 16 channels x 8 heads x 128 KiB chunks (NCCL_NVLS_CHUNKSIZE, NCCL >= 2.22;
  // older versions started from the 512 KiB Simple slot) = 16 MiB loops, 1/64 of the call. The
  // NVLink stages are the slow ones (the bandwidth term); on top, one loop of the other NVLink
  // stage and of the two hops, each moving the buffer over the node's 8 x 400 Gb/s at eta_nic
  // (on 2 nodes a node sends S, nccl_dtree_max_egress).
  knobs.env.algo = "nvlstree";
  Predictor two(spec, 2, 8, knobs);
  const auto p = two.predict(CollectiveOp::allreduce, 1ull << 30, prof);
  REQUIRE(p.algorithm == "NVLSTree");
  CHECK(p.chunk_bytes == 131072);
  const auto& b = p.breakdown;
  const double t_slowest = b.fabric_bandwidth_s + b.transport_s;
  const double t_hop = static_cast<double>(1ull << 30) / (8 * 50e9 * prof[Param::eta_nic]);
  REQUIRE(t_hop < t_slowest);
  CHECK(b.protocol_s == approx((t_slowest + 2 * t_hop) / 64).epsilon(1e-9));
  // From 4 nodes NCCL caps the NVLSTree chunk at 64 KiB (NCCL_NVLSTREE_MAX_CHUNKSIZE's default).
  const auto q = Predictor(spec, 4, 8, knobs).predict(CollectiveOp::allreduce, 1ull << 30, prof);
  REQUIRE(q.algorithm == "NVLSTree");
  CHECK(q.chunk_bytes == 65536);
}

TEST_CASE("stack: a Tree chunk crosses each network hop whole: one loop per hop but the slowest") {
  // Four DGX H100, Tree/Simple all-reduce of 1 GiB on 16 channels: 512 KiB chunks (the tree is
  // deep enough for NCCL to keep the Simple slot), a loop of 16 x 512 KiB = 1/128 of the call.
  // The NICs are the slowest stage (fabric bandwidth + transport: every byte through the busiest
  // node's NICs); the tree's 2 log2 4 = 4 hops each forward whole chunks, so one loop of each of
  // the other three hops comes on top. Inside the node the chain hides (no stage), and on one node
  // there is no hop: no fill. No per-channel cap and no FIFO sync, to see the term.
  const auto spec = topologies::load_cluster("dgx-h100");
  Profile prof = prior_with(90, {{Param::cap_simple_GBps, 2000},
                                 {Param::chunk_sync_us, 0},
                                 {Param::eta_nvlink, 1.0},
                                 {Param::eta_nic, 0.9}});
  sim::stack::Knobs knobs;
  knobs.env.algo = "tree";
  knobs.env.proto = "simple";
  knobs.env.max_ctas = 16;
  const std::uint64_t S = 1ull << 30;
  // The NIC stage: the busiest node sends egress x S (NCCL's two trees) over 8 x 400 Gb/s.
  const auto t_net = [&](int nodes) {
    return select::nccl_dtree_max_egress(nodes) * static_cast<double>(S) / (8 * 50e9 * 0.9);
  };
  const auto p = Predictor(spec, 4, 8, knobs).predict(CollectiveOp::allreduce, S, prof);
  REQUIRE(p.algorithm == "Tree");
  REQUIRE(p.channels == 16);
  CHECK(p.chunk_bytes == 524288);
  const auto& b = p.breakdown;
  REQUIRE(b.fabric_bandwidth_s + b.transport_s == approx(t_net(4)).epsilon(1e-9));
  CHECK(b.protocol_s == approx(3 * t_net(4) / 128).epsilon(1e-9));
  // Sixteen nodes: 8 hops, 7 loops on top (the same chunk).
  const auto q = Predictor(spec, 16, 8, knobs).predict(CollectiveOp::allreduce, S, prof);
  REQUIRE(q.chunk_bytes == 524288);
  CHECK(q.breakdown.protocol_s == approx(7 * t_net(16) / 128).epsilon(1e-9));
  const auto one = Predictor(spec, 1, 8, knobs).predict(CollectiveOp::allreduce, S, prof);
  CHECK(one.breakdown.protocol_s == 0.0);
}

TEST_CASE("stack: the per-chunk sync hides behind the network when the NIC is the slower stage") {
  // Ring/Simple all-reduce of 1 GiB. Two DGX H100: the NICs (8 x 50 GB/s) are slower than NVLink
  // (450 GB/s per GPU), so a small per-chunk GPU sync leaves the time unchanged, and a large one
  // shows only by what the GPU stage then takes beyond the NIC stage. One node: NVLink is the only
  // stage, every chunk's sync adds in series. Both on 16 channels (NCCL gives one node 24), so that
  // both split the buffer into as many chunks.
  const auto spec = topologies::load_cluster("dgx-h100");
  Profile prof = sim::stack::prior_profile(90);
  sim::stack::Knobs knobs;
  knobs.env.algo = "ring";
  knobs.env.proto = "simple";
  knobs.env.max_ctas = 16;
  const std::uint64_t S = 1ull << 30;
  auto time_with_sync = [&](int nodes, double sync_us) {
    Profile p = prof;
    p.at(Param::chunk_sync_us) = sync_us;
    return Predictor(spec, nodes, 8, knobs).predict(CollectiveOp::allreduce, S, p).time_s;
  };
  CHECK(time_with_sync(2, 0.01) == approx(time_with_sync(2, 0)).epsilon(1e-12));
  const double slow = time_with_sync(2, 100);
  CHECK(slow > time_with_sync(2, 0) * 1.05);
  CHECK(slow < time_with_sync(2, 0) + (time_with_sync(1, 100) - time_with_sync(1, 0)));  // partly hidden
  CHECK(time_with_sync(1, 0.01) > time_with_sync(1, 0));
}

TEST_CASE("stack: NVLSTree moves its NVLS traffic at eta_nvlstree, NVLS at eta_nvls") {
  // Two DGX H100, 1 GiB all-reduce. NVLink part: 450 GB/s x busfactor 2 x 15/16 = 843.75 GB/s of
  // bus bytes at line rate; network: 8 x 50 GB/s, one S per node on two nodes = 750 GB/s of bus
  // bytes. With eta_nvlstree 0.5 the NVLS part (421.9 GB/s) is the achievable rate.
  const auto spec = topologies::load_cluster("dgx-h100");
  Profile prof = sim::stack::prior_profile(90);
  prof.at(Param::eta_nvls) = 0.9;
  prof.at(Param::eta_nvlstree) = 0.5;
  prof.at(Param::cap_simple_GBps) = 2000;
  sim::stack::Knobs knobs;
  knobs.env.algo = "nvlstree";
  Predictor pr(spec, 2, 8, knobs);
  const std::uint64_t S = 1ull << 30;
  const auto p = pr.predict(CollectiveOp::allreduce, S, prof);
  REQUIRE(p.algorithm == "NVLSTree");
  const double bus = S * 2.0 * 15 / 16;
  CHECK(p.busbw_line_GBps == approx(750));
  CHECK(p.breakdown.transport_s == approx(bus / (843.75e9 * 0.5) - bus / 750e9).epsilon(1e-9));
  // One node, NVLS: eta_nvls applies (NVLink only: 450 x 2 x 7/8 = 787.5 GB/s of bus bytes).
  knobs.env.algo = "nvls";
  const auto q = Predictor(spec, 1, 8, knobs).predict(CollectiveOp::allreduce, S, prof);
  REQUIRE(q.algorithm == "NVLS");
  const double bus1 = S * 2.0 * 7 / 8;
  CHECK(q.breakdown.transport_s == approx(bus1 / (787.5e9 * 0.9) - bus1 / 787.5e9).epsilon(1e-9));
}

TEST_CASE("stack: intra-node steps of a multi-node ring cost at least NCCL's network overhead") {
  // 2 x 8 H100, Ring/LL forced, 8 B all-reduce: 2 (n-1) = 30 steps, 2 of them across the network.
  // NCCL's model (tuning.cc) lets none of the 28 NVLink steps cost less than the proxy's per-step
  // network overhead, 1 us on an Intel host (x3 for Simple); the LL NVLink prior is 0.6 us.
  const auto spec = topologies::load_cluster("dgx-h100");
  const Profile prof = sim::stack::prior_profile(90);
  sim::stack::Knobs knobs;
  knobs.env.algo = "ring";
  knobs.env.proto = "ll";
  const auto p = Predictor(spec, 2, 8, knobs).predict(CollectiveOp::allreduce, 8, prof);
  CHECK(prof[Param::lat_nvlink_ll_us] < 1.0);
  // The overhead is the proxy's, in series with the NVLink hop (0.6 us on dgx-h100, counted by the
  // fabric layer): the algorithm layer gets max(step - route, overhead) per NVLink step.
  const auto one = Predictor(spec, 1, 8, knobs).predict(CollectiveOp::allreduce, 8, prof);
  const double route_s = one.breakdown.fabric_latency_s / 14;
  CHECK(route_s == approx(0.6e-6));
  CHECK(p.breakdown.algorithm_latency_s == approx((28 * 1.0 + 2 * prof[Param::lat_net_ll_us]) * 1e-6));
  // NCCL_NET_OVERHEAD (ns) replaces the host default; one node has no network overhead.
  knobs.env.net_overhead_ns = 2000;
  const auto q = Predictor(spec, 2, 8, knobs).predict(CollectiveOp::allreduce, 8, prof);
  CHECK(q.breakdown.algorithm_latency_s == approx((28 * 2.0 + 2 * prof[Param::lat_net_ll_us]) * 1e-6));
  const auto one_q = Predictor(spec, 1, 8, knobs).predict(CollectiveOp::allreduce, 8, prof);
  CHECK(one_q.breakdown.algorithm_latency_s ==
        approx(14 * std::max(0.0, prof[Param::lat_nvlink_ll_us] * 1e-6 - route_s)));
  // Simple: 3 us floor, below the 3.4 us Simple NVLink prior, so the prior stands.
  CHECK(select::ring_net_overhead_us(Predictor(spec, 2, 8).shape(), {}, Proto::simple) == 3.0);
}

TEST_CASE("stack: an NVLink step costs NCCL's whole-step latency, the route included, not the route on top") {
  // 1 x 8 H100, Ring/LL, 8 B all-reduce: 14 NVLink steps. The algorithm layer plus the fabric
  // layer's route give max(step latency, route) per step: with the 1.0 us step of this profile,
  // 14 us in all, of which the route (0.6 us per step) is the fabric's.
  const auto spec = topologies::load_cluster("dgx-h100");
  const Profile prof = prior_with(90, {{Param::lat_nvlink_ll_us, 1.0}});
  sim::stack::Knobs knobs;
  knobs.env.algo = "ring";
  knobs.env.proto = "ll";
  const auto p = Predictor(spec, 1, 8, knobs).predict(CollectiveOp::allreduce, 8, prof);
  CHECK(p.breakdown.algorithm_latency_s + p.breakdown.fabric_latency_s == approx(14 * 1.0e-6));
  CHECK(p.breakdown.fabric_latency_s == approx(14 * 0.6e-6));
  // A step shorter than the route costs the route: nothing is left to the algorithm layer.
  const auto short_step =
      Predictor(spec, 1, 8, knobs)
          .predict(CollectiveOp::allreduce, 8, prior_with(90, {{Param::lat_nvlink_ll_us, 0.2}}));
  CHECK(short_step.breakdown.algorithm_latency_s == 0.0);
  CHECK(short_step.breakdown.fabric_latency_s == approx(14 * 0.6e-6));
  // NVLS: one round (NCCL's 25 us hwLat) crosses the route twice; the round costs 25 us in all.
  knobs.env.algo = "nvls";
  knobs.env.proto = "simple";
  const auto n = Predictor(spec, 1, 8, knobs).predict(CollectiveOp::allreduce, 1 << 20, prof);
  CHECK(n.algorithm == "NVLS");
  CHECK(n.breakdown.algorithm_latency_s + n.breakdown.fabric_latency_s ==
        approx(prof[Param::nvls_latency_us] * 1e-6));
}

TEST_CASE("stack: a Tree/LL channel moves 2 / 3.8 of what a Ring/LL channel moves (NCCL's model)") {
  // 2 x 8 H100, 1 MiB all-reduce forced to LL, with a per-channel LL cap far below the links so
  // the channels bind: bandwidth terms = S_bus / (channels x cap x share), share 1 for the ring
  // and 2 / 3.8 for the tree (tuning.cc: Ring/LL busBw / 2, Tree/LL busBw / 3.8).
  const auto spec = topologies::load_cluster("dgx-h100");
  const Profile prof = prior_with(90, {{Param::cap_ll_GBps, 0.5}, {Param::chunk_sync_us, 0.0}});
  const double S = 1 << 20;
  const double s_bus = S * 2 * 15 / 16;
  for (const char* algo : {"ring", "tree"}) {
    sim::stack::Knobs knobs;
    knobs.env.algo = algo;
    knobs.env.proto = "ll";
    const auto p =
        Predictor(spec, 2, 8, knobs).predict(CollectiveOp::allreduce, static_cast<std::uint64_t>(S), prof);
    const double share = std::string(algo) == "tree" ? 2.0 / 3.8 : 1.0;
    CAPTURE(algo);
    CHECK(p.breakdown.fabric_bandwidth_s + p.breakdown.transport_s + p.breakdown.protocol_s ==
          approx(s_bus / (p.channels * 0.5e9 * share)));
  }
}

TEST_CASE("stack: Grace hosts are Arm to NCCL's tuner, so 2.29+ leaves their NVLSTree uncorrected") {
  // src/graph/tuning.cc (2.29+): the Tree correction factor scales NVLSTree AllReduce bandwidth on
  // Blackwell only when comm->cpuArch is x86; GB200 trays run on Grace (Arm).
  sim::stack::Knobs v229;
  v229.nccl_version = select::NcclVersion::v2_29_7;
  const Predictor racks(topologies::load_cluster("gb200-nvl72"), 36, 4, v229);  // 2 NVL72 domains
  CHECK(racks.shape().cpu_arch == select::CpuArch::arm);
  CHECK(Predictor(topologies::load_cluster("hgx-b200"), 2, 8).shape().cpu_arch == select::CpuArch::x86);
  select::CommShape as_x86 = racks.shape();
  as_x86.cpu_arch = select::CpuArch::x86;
  const std::uint64_t bytes = 64ull << 20;  // log2(64 MiB / 64) = 20: factor .8 for Simple
  const auto arm = select::select_algorithm(select::tune_model(racks.shape(), {}, v229.nccl_version),
                                            racks.shape(), select::Func::all_reduce, bytes);
  const auto x86 = select::select_algorithm(select::tune_model(as_x86, {}, v229.nccl_version), as_x86,
                                            select::Func::all_reduce, bytes);
  const int nvls_tree = select::idx(Algo::nvls_tree);
  const int simple = select::idx(Proto::simple);
  REQUIRE(arm.time_us[nvls_tree][simple] > 0);
  CHECK(arm.time_us[nvls_tree][simple] < x86.time_us[nvls_tree][simple]);
}

TEST_CASE("stack: send/receive ignores a forced protocol, as NCCL's P2P path does (addP2pToPlan)") {
  // NCCL's P2P path never reads NCCL_PROTO: LL while a peer's bytes fit 16 KiB per channel,
  // Simple above, never LL128. A forced protocol changes neither the choice nor the time.
  const auto spec = topologies::load_cluster("dgx-h100");
  const Profile prof = sim::stack::prior_profile(90);
  const Predictor plain(spec, 1, 8);
  for (const char* forced : {"ll128", "LL", "simple", "^ll128", "LL128,Simple"}) {
    CAPTURE(forced);
    sim::stack::Knobs knobs;
    knobs.env.proto = forced;
    const Predictor pr(spec, 1, 8, knobs);
    for (const auto& call :
         {std::pair{CollectiveOp::sendrecv, 32ull << 20}, std::pair{CollectiveOp::alltoall, 1ull << 30},
          std::pair{CollectiveOp::sendrecv, 1ull << 10}, std::pair{CollectiveOp::alltoall, 1ull << 20}}) {
      const CollectiveOp op = call.first;
      const std::uint64_t bytes = call.second;
      CAPTURE(bytes);
      const auto p = pr.predict(op, bytes, prof);
      const auto q = plain.predict(op, bytes, prof);
      CHECK(p.algorithm == "P2P");
      CHECK(p.proto == q.proto);
      CHECK(p.proto != Proto::ll128);
      CHECK(p.channels == q.channels);
      CHECK(p.time_s == q.time_s);
    }
    CHECK(pr.p2p_proto_note(CollectiveOp::sendrecv).find("does not apply to sendrecv") != std::string::npos);
    CHECK(pr.p2p_proto_note(CollectiveOp::alltoall).find("does not apply to alltoall") != std::string::npos);
    CHECK(pr.p2p_proto_note(CollectiveOp::allreduce).empty());  // the tuner honours it there
  }
  CHECK(plain.predict(CollectiveOp::sendrecv, 32ull << 20, prof).proto == Proto::simple);
  CHECK(plain.predict(CollectiveOp::sendrecv, 1ull << 10, prof).proto == Proto::ll);
  CHECK(plain.p2p_proto_note(CollectiveOp::sendrecv).empty());
  // Across nodes too.
  sim::stack::Knobs ll128;
  ll128.env.proto = "LL128";
  CHECK(Predictor(spec, 2, 8, ll128).predict(CollectiveOp::alltoall, 1ull << 30, prof).proto ==
        Proto::simple);
}

TEST_CASE("stack: CollNet only across NVLink domains of a fabric whose switches reduce, as NCCL sets it up") {
  // NCCL disables CollNet below NCCL_COLLNET_NODE_THRESHOLD (2) nodes (src/init.cc), and its SHARP
  // plugin needs switches that reduce: a dragonfly's routers do not. --collnet on is then ignored
  // (no CollNet pick, the reason kept for the communicator line and a forced algorithm's refusal).
  const Profile h100 = sim::stack::prior_profile(90);
  sim::stack::Knobs collnet;
  collnet.collnet = true;
  const auto dgx = topologies::load_cluster("dgx-h100");
  const Predictor one(dgx, 1, 8, collnet);
  CHECK_FALSE(one.shape().collnet_support);
  CHECK(one.shape().collnet_off_reason.find("one NVLink domain") != std::string::npos);
  CHECK(select::describe_comm(one.shape())
            .find("; --collnet on ignored: CollNet is not set up on one NVLink domain") != std::string::npos);
  for (std::uint64_t bytes : {32ull << 20, 1ull << 30}) {
    const auto p = one.predict(CollectiveOp::allreduce, bytes, h100);
    CHECK(p.algorithm == Predictor(dgx, 1, 8).predict(CollectiveOp::allreduce, bytes, h100).algorithm);
    CHECK(p.algorithm.find("CollNet") == std::string::npos);
  }
  sim::stack::Knobs forced = collnet;
  forced.env.algo = "collnetdirect";
  CHECK_THROWS_WITH_AS(Predictor(dgx, 1, 8, forced).predict(CollectiveOp::allreduce, 1ull << 20, h100),
                       doctest::Contains("CollNetDirect: CollNet is not set up on one NVLink domain"),
                       InputError);
  // Two DGX H100 on their InfiniBand fat tree: CollNet is set up and picked for large all-reduces.
  const Predictor two(dgx, 2, 8, collnet);
  CHECK(two.shape().collnet_support);
  CHECK(two.shape().collnet_off_reason.empty());
  CHECK(two.geometry().collnet_ports == 8);
  CHECK(two.predict(CollectiveOp::allreduce, 1ull << 30, h100).algorithm.find("CollNet") == 0);
  // GH200 on Slingshot (dragonfly): the NICs reach routers only.
  const auto alps = topologies::load_cluster("gh200-slingshot");
  const Predictor dragonfly(alps, 2, 4, collnet);
  CHECK(dragonfly.geometry().collnet_ports == 0);
  CHECK_FALSE(dragonfly.shape().collnet_support);
  CHECK(dragonfly.shape().collnet_off_reason.find("no switch that reduces") != std::string::npos);
  const Profile gh200 = sim::stack::prior_profile(90);
  for (std::uint64_t bytes : {1ull << 20, 32ull << 20, 1ull << 30})
    CHECK(dragonfly.predict(CollectiveOp::allreduce, bytes, gh200).algorithm ==
          Predictor(alps, 2, 4).predict(CollectiveOp::allreduce, bytes, gh200).algorithm);
  // Without --collnet on nothing is said.
  CHECK(Predictor(alps, 2, 4).shape().collnet_off_reason.empty());
}
