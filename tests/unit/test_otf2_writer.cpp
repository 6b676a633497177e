// OTF2 output of simulated timelines (sim/report/otf2_writer): every op of a simulated training
// iteration comes back from the archive with its region, its timestamps (1 ns ticks), its
// collective kind and sizes and its messages; overlapping ops of one stream go to separate
// locations so regions nest; two writes are byte-identical.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "common/error.hpp"
#include "sim/report/otf2_writer.hpp"
#include "test_train_helpers.hpp"
#include "workloads/importers/otf2_reader.hpp"

using namespace commstack;
namespace fs = std::filesystem;

namespace {

std::string temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / fmt::format("commstack-otf2-{}-{}", name, getpid());
  fs::remove_all(p);
  return p.string();
}

std::uint64_t tick(double s) { return static_cast<std::uint64_t>(std::llround(s * 1e9)); }

// (location, region name, enter tick, leave tick) of every region instance, pairing Enter and
// Leave per location with a stack; fails the test on a Leave that does not match its Enter.
using Span = std::tuple<std::string, std::string, std::uint64_t, std::uint64_t>;
std::vector<Span> spans(const workloads::Otf2Archive& a) {
  std::map<std::uint64_t, std::vector<std::pair<std::uint32_t, std::uint64_t>>> open;
  std::vector<Span> out;
  for (const auto& e : a.events) {
    if (e.kind == workloads::Otf2EventKind::enter) open[e.location].push_back({e.region, e.time});
    if (e.kind == workloads::Otf2EventKind::leave) {
      auto& stack = open[e.location];
      REQUIRE_FALSE(stack.empty());
      REQUIRE(stack.back().first == e.region);
      const auto* loc = a.location(e.location);
      REQUIRE(loc != nullptr);
      out.emplace_back(loc->group_name, a.regions.at(e.region).name, stack.back().second, e.time);
      stack.pop_back();
    }
  }
  for (const auto& [loc, stack] : open) CHECK(stack.empty());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::map<std::string, std::string> archive_files(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = read_bytes(e.path());
  }
  return files;
}

}  // namespace

TEST_CASE("otf2: a simulated training iteration (TP2 PP2 DP2, every rank) round-trips through an OTF2 archive") {
  auto setup = train_test::setup("megatron-1.7b", 2, 2, 2, 8, 1, 8);
  setup.fold = false;
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-a100"), 1);
  sim::Simulator simulator(topo);
  const auto r = sim::train::simulate_training(simulator, setup);
  const auto& g = r.graph;
  REQUIRE(g.ranks.size() == 8);

  const std::string dir = temp_dir("train");
  const auto timeline = sim::otf2_timeline(r, topo, "test");
  const auto summary = sim::write_otf2(timeline, dir);
  const auto a = workloads::read_otf2_archive(dir);
  CHECK(a.ticks_per_second == 1000000000ULL);
  CHECK(a.global_offset == 0);
  CHECK(a.creator == "commstack (simulated timeline)");
  CHECK(static_cast<long long>(a.locations.size()) == summary.locations);
  CHECK(static_cast<long long>(a.events.size()) == summary.events);
  CHECK(a.warnings.empty());

  // Every op is one region instance with the simulated start and finish in ns.
  std::vector<Span> expected;
  std::map<std::string, int> kinds;
  for (const auto& op : g.ops) {
    const auto i = static_cast<std::size_t>(op.id);
    expected.emplace_back(fmt::format("GPU rank {}", op.rank), op.name, tick(r.schedule.start[i]), tick(r.schedule.finish[i]));
    ++kinds[to_string(op.kind)];
  }
  std::sort(expected.begin(), expected.end());
  const auto got = spans(a);
  CHECK(got.size() == g.ops.size());
  CHECK(got == expected);

  // Collectives: one begin/end pair per collective op, with the op's kind and MPI-style sizes.
  std::multiset<std::tuple<std::string, std::string, std::uint64_t, std::uint64_t>> want_coll, got_coll;
  for (const auto& op : g.ops) {
    if (op.kind != workloads::OpKind::collective) continue;
    const auto n = g.communicators[static_cast<std::size_t>(op.communicator)].ranks.size();
    std::uint64_t sent = op.bytes, recv = op.bytes;
    if (op.collective == workloads::Collective::all_gather) sent = op.bytes / n;
    if (op.collective == workloads::Collective::reduce_scatter) recv = op.bytes / n;
    want_coll.insert({fmt::format("GPU rank {}", op.rank), to_string(op.collective), sent, recv});
  }
  int begins = 0;
  for (const auto& e : a.events) {
    if (e.kind == workloads::Otf2EventKind::collective_begin) ++begins;
    if (e.kind == workloads::Otf2EventKind::collective_end) {
      got_coll.insert({a.location(e.location)->group_name, e.collective, e.bytes, e.bytes_received});
      // The communicator's members are the op's communicator: same size as a tp/dp/... group.
      CHECK(a.comms.count(e.comm) == 1);
    }
  }
  CHECK(kinds["collective"] > 0);
  CHECK(begins == kinds["collective"]);
  CHECK(got_coll == want_coll);

  // Point-to-point: one MpiSend per send op and one MpiRecv per recv op, same bytes and peers.
  std::multiset<std::tuple<int, int, std::uint64_t>> want_send, got_send, want_recv, got_recv;
  for (const auto& op : g.ops) {
    if (op.kind == workloads::OpKind::send) want_send.insert({op.rank, op.peer, op.bytes});
    if (op.kind == workloads::OpKind::recv) want_recv.insert({op.peer, op.rank, op.bytes});
  }
  const auto& world = a.comms.at(0).locations;
  REQUIRE(world.size() == 8);
  const auto rank_of_location = [&](std::uint64_t loc) {
    const auto* l = a.location(loc);
    return std::stoi(l->group_name.substr(std::string("GPU rank ").size()));
  };
  for (const auto& e : a.events) {
    if (e.kind == workloads::Otf2EventKind::send) {
      got_send.insert({rank_of_location(e.location), rank_of_location(world.at(e.peer)), e.bytes});
    }
    if (e.kind == workloads::Otf2EventKind::recv) {
      got_recv.insert({rank_of_location(world.at(e.peer)), rank_of_location(e.location), e.bytes});
    }
  }
  CHECK(kinds["send"] > 0);
  CHECK(got_send == want_send);
  CHECK(got_recv == want_recv);

  // Communicators are groups of the right size: every tp group has 2 members, the world 8.
  int tp_groups = 0;
  for (const auto& [id, c] : a.comms) {
    if (c.name.rfind("tp ", 0) == 0) {
      ++tp_groups;
      CHECK(c.locations.size() == 2);
    }
  }
  CHECK(tp_groups == 4);
  fs::remove_all(dir);
}

TEST_CASE("otf2: writing the same timeline twice gives byte-identical archives") {
  auto setup = train_test::setup("megatron-1.7b", 2, 2, 2, 8, 1, 8);
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-a100"), 1);
  sim::Simulator simulator(topo);
  const auto r = sim::train::simulate_training(simulator, setup);
  const auto t = sim::otf2_timeline(r, topo, "determinism");
  const std::string d1 = temp_dir("det1"), d2 = temp_dir("det2");
  sim::write_otf2(t, d1);
  sim::write_otf2(t, d2);
  const auto f1 = archive_files(d1);
  const auto f2 = archive_files(d2);
  CHECK(f1.size() >= 3);
  CHECK(f1 == f2);
  // Writing again into the same directory replaces the archive instead of failing.
  sim::write_otf2(t, d1);
  CHECK(archive_files(d1) == f2);
  fs::remove_all(d1);
  fs::remove_all(d2);
}

TEST_CASE("otf2: overlapping ops of one stream go to separate locations and every region nests") {
  sim::Otf2Timeline t;
  t.title = "lanes";
  t.machine = "test";
  t.ranks = {0, 1};
  t.node_of_rank = {0, 1};
  t.streams = {"compute", "pp"};
  t.message_stream = 1;
  t.comms = {{"world", {0, 1}}};
  // Rank 0 sends (0-3 us) while it receives (1-2 us): the batched send/recv of Megatron.
  t.intervals.push_back({0, 1, "send", "send", 0.0, 3e-6});
  t.intervals.push_back({0, 1, "recv", "recv", 1e-6, 2e-6});
  t.intervals.push_back({1, 1, "recv", "recv", 0.0, 3e-6});
  t.intervals.push_back({1, 1, "send", "send", 1e-6, 2e-6});
  t.intervals.push_back({0, 0, "gemm", "compute", 3e-6, 5e-6});
  t.messages.push_back({0, true, 1, 7, 1024, 0.0});
  t.messages.push_back({1, false, 0, 7, 1024, 3e-6});
  t.messages.push_back({1, true, 0, 8, 2048, 1e-6});
  t.messages.push_back({0, false, 1, 8, 2048, 2e-6});
  const std::string dir = temp_dir("lanes");
  const auto s = sim::write_otf2(t, dir);
  CHECK(s.locations == 5);  // rank 0: pp, pp #2, compute; rank 1: pp, pp #2
  const auto a = workloads::read_otf2_archive(dir);
  std::set<std::string> names;
  for (const auto& l : a.locations) names.insert(l.group_name + "/" + l.name);
  CHECK(names == std::set<std::string>{"GPU rank 0/compute", "GPU rank 0/pp", "GPU rank 0/pp #2", "GPU rank 1/pp",
                                       "GPU rank 1/pp #2"});
  const auto got = spans(a);  // fails on any Leave that does not close the innermost Enter
  CHECK(got.size() == 5);
  CHECK(std::count(got.begin(), got.end(), Span{"GPU rank 0", "recv", 1000, 2000}) == 1);
  CHECK(std::count(got.begin(), got.end(), Span{"GPU rank 0", "gemm", 3000, 5000}) == 1);
  int sends = 0, recvs = 0;
  for (const auto& e : a.events) {
    if (e.kind == workloads::Otf2EventKind::send) {
      ++sends;
      CHECK(a.location(e.location)->name == "pp");  // the rank's COMM_LOCATIONS entry
    }
    if (e.kind == workloads::Otf2EventKind::recv) ++recvs;
  }
  CHECK(sends == 2);
  CHECK(recvs == 2);
  fs::remove_all(dir);
}

TEST_CASE("otf2: a collective sweep gives one collective per size on every GPU with MPI-style sizes") {
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-a100"), 1);
  std::vector<sim::SweepPoint> points(2);
  points[0].size.bytes = 8 << 20;
  points[0].time_s = 1e-4;
  points[1].size.bytes = 16 << 20;
  points[1].time_s = 2e-4;
  std::vector<sim::FlowRecord> flows(1);
  flows[0].id = 5;
  flows[0].src = 2;
  flows[0].dst = 3;
  flows[0].bytes = 4096;
  flows[0].start_s = 1e-5;
  flows[0].end_s = 3e-5;
  const std::string dir = temp_dir("sweep");
  sim::write_otf2(sim::otf2_sweep_timeline(topo, sim::CollectiveOp::allgather, points, flows, "sweep"), dir);
  const auto a = workloads::read_otf2_archive(dir);
  CHECK(a.locations.size() == 8);
  int ends = 0;
  for (const auto& e : a.events) {
    if (e.kind != workloads::Otf2EventKind::collective_end) continue;
    ++ends;
    CHECK(e.collective == "all_gather");
    // nccl-tests all_gather size = the gathered output; each of the 8 ranks contributes 1/8.
    CHECK((e.bytes_received == (8u << 20) || e.bytes_received == (16u << 20)));
    CHECK(e.bytes * 8 == e.bytes_received);
    CHECK((e.time == 100000 || e.time == 300000));
  }
  CHECK(ends == 16);
  int msgs = 0;
  for (const auto& e : a.events) {
    if (e.kind == workloads::Otf2EventKind::send) {
      ++msgs;
      CHECK(e.time == 110000);  // 100 us offset of the last size + 10 us
      CHECK(e.bytes == 4096);
      CHECK(e.tag == 5);
    }
    if (e.kind == workloads::Otf2EventKind::recv) {
      ++msgs;
      CHECK(e.time == 130000);
    }
  }
  CHECK(msgs == 2);
  fs::remove_all(dir);
}

TEST_CASE("otf2: an archive directory that cannot be created is an InputError") {
  const std::string file = temp_dir("notadir");
  std::ofstream(file) << "x";
  sim::Otf2Timeline t;
  t.ranks = {0};
  t.node_of_rank = {0};
  t.streams = {"gpu"};
  t.comms = {{"world", {0}}};
  CHECK_THROWS_AS(sim::write_otf2(t, file + "/sub"), InputError);
  fs::remove_all(file);
}
