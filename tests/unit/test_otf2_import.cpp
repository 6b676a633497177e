// OTF2 archives as imported traces for replay (workloads/importers/otf2_import): the real Score-P
// ping-pong becomes 2 ranks with 16 matched sends and receives; a simulated training iteration
// written with --otf2 comes back with the same collectives (kind, bytes, communicator size).
#include <doctest/doctest.h>

#include "approx.hpp"

#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "common/error.hpp"
#include "sim/report/otf2_writer.hpp"
#include "test_train_helpers.hpp"
#include "workloads/importers/otf2_import.hpp"

using namespace commstack;

TEST_CASE("otf2 import: the Score-P ping-pong is 2 ranks, 16 matched send/recv pairs and the MPI set-up calls") {
  const auto t = workloads::importers::import_otf2(std::string(COMMSTACK_SOURCE_DIR) +
                                                  "/workloads/importers/samples/otf2/scorep-ping-pong");
  CHECK(t.format == "otf2");
  CHECK(t.graph.world == 2);
  CHECK(t.graph.ranks == std::vector<int>{0, 1});
  CHECK_NOTHROW(workloads::check_graph(t.graph));
  std::map<workloads::OpKind, int> kinds;
  std::map<int, std::uint64_t> sent;
  for (const auto& op : t.graph.ops) {
    ++kinds[op.kind];
    if (op.kind == workloads::OpKind::send) sent[op.rank] += op.bytes;
    CHECK(op.measured_s >= 0);
  }
  // otf2-print: 16 MPI_SEND and 16 MPI_RECV inside MPI_Send / MPI_Recv regions; the other
  // innermost regions are MPI_Init, MPI_Comm_size, MPI_Comm_rank, MPI_Finalize on each rank (8);
  // "int main(int, char**)" encloses them all and gives no op.
  CHECK(kinds[workloads::OpKind::send] == 16);
  CHECK(kinds[workloads::OpKind::recv] == 16);
  CHECK(kinds[workloads::OpKind::compute] == 8);
  CHECK(sent[0] == 16384ULL * 255);
  CHECK(sent[1] == 16384ULL * 255);
  // Each rank's ops span MPI_Init's Enter to MPI_Finalize's Leave (otf2-print: rank 0 from
  // 7397466977702853 to 7397467395123952, rank 1 from 7397466977062212 to 7397467395126352
  // ticks at 2095197216 ticks/s).
  CHECK(t.traced_iteration_s.at(0) == approx(417421099.0 / 2095197216.0).epsilon(1e-9));
  CHECK(t.traced_iteration_s.at(1) == approx(418064140.0 / 2095197216.0).epsilon(1e-9));
  CHECK(t.traced_s == approx(418064140.0 / 2095197216.0).epsilon(1e-9));
}

TEST_CASE("otf2 import: a simulated iteration written with --otf2 comes back with the same collectives") {
  auto setup = train_test::setup("megatron-1.7b", 2, 2, 2, 8, 1, 8);
  setup.fold = false;
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-a100"), 1);
  sim::Simulator simulator(topo);
  const auto r = sim::train::simulate_training(simulator, setup);
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("commstack-otf2-import-{}", getpid());
  sim::write_otf2(sim::otf2_timeline(r, topo, "import"), dir.string());
  const auto t = workloads::importers::import_otf2(dir.string());
  CHECK(t.graph.world == 8);
  CHECK_NOTHROW(workloads::check_graph(t.graph));
  using Key = std::tuple<int, workloads::Collective, std::uint64_t, std::size_t>;
  std::multiset<Key> want, got;
  for (const auto& op : r.graph.ops) {
    if (op.kind != workloads::OpKind::collective) continue;
    want.insert({op.rank, op.collective, op.bytes, r.graph.communicators[static_cast<std::size_t>(op.communicator)].ranks.size()});
  }
  for (const auto& op : t.graph.ops) {
    if (op.kind != workloads::OpKind::collective) continue;
    got.insert({op.rank, op.collective, op.bytes, t.graph.communicators[static_cast<std::size_t>(op.communicator)].ranks.size()});
  }
  CHECK(!want.empty());
  CHECK(got == want);
  // Every op's training step comes back (attributes micro_batch, layer, phase): what replay --scale-pp needs.
  CHECK(t.steps_known);
  using Step = std::tuple<int, workloads::OpKind, int, int, workloads::Phase>;
  std::multiset<Step> want_steps, got_steps;
  for (const auto& op : r.graph.ops) want_steps.insert({op.rank, op.kind, op.micro_batch, std::max(op.layer, -1), op.phase});
  for (const auto& op : t.graph.ops) got_steps.insert({op.rank, op.kind, op.micro_batch, op.layer, op.phase});
  CHECK(got_steps == want_steps);
  std::filesystem::remove_all(dir);
}

TEST_CASE("otf2 import: a location group's rank number out of range is refused, naming the group") {
  // A corrupt "MPI Rank N" used to reach std::stoi unchecked: std::out_of_range (an internal error)
  // past 2^31, and a world of billions of ranks below it.
  workloads::Otf2Archive a;
  a.anchor = "broken/traces.otf2";
  a.ticks_per_second = 1'000'000;
  workloads::Otf2LocationDef loc;
  loc.id = 0;
  loc.name = "Master thread";
  loc.group = 0;
  loc.group_name = "MPI Rank 99999999999";
  a.locations.push_back(loc);
  CHECK_THROWS_WITH_AS(
      workloads::importers::import_otf2_archive(a),
      "broken/traces.otf2: location group 'MPI Rank 99999999999': rank 99999999999 out of range "
      "(expected < 262144)",
      InputError);
  a.locations.front().group_name = "MPI Rank 262144";  // kMaxGpus, the limit of every input
  CHECK_THROWS_WITH_AS(workloads::importers::import_otf2_archive(a),
                       doctest::Contains("rank 262144 out of range"), InputError);
  a.locations.front().group_name = "MPI Rank 3";  // in range: the next refusal is the missing events
  CHECK_THROWS_WITH_AS(workloads::importers::import_otf2_archive(a),
                       doctest::Contains("no region (Enter/Leave) events"), InputError);
}
