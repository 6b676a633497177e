// Reading OTF2 archives (workloads/importers/otf2_reader): a real Score-P trace of an MPI
// ping-pong (workloads/importers/samples/otf2/scorep-ping-pong, see its PROVENANCE.md), and
// damaged archives (truncated or mutated files) that must give InputError, never a crash.
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/error.hpp"
#include "workloads/importers/otf2_reader.hpp"

using namespace commstack;
namespace fs = std::filesystem;

namespace {

const std::string kSample = std::string(COMMSTACK_SOURCE_DIR) + "/workloads/importers/samples/otf2/scorep-ping-pong";

std::map<workloads::Otf2EventKind, int> counts(const workloads::Otf2Archive& a) {
  std::map<workloads::Otf2EventKind, int> n;
  for (const auto& e : a.events) ++n[e.kind];
  return n;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

}  // namespace

// Expected numbers come from the OTF2 project's own tool, not from this reader:
//   otf2-print traces.otf2 | awk 'NR>3{print $1}' | sort | uniq -c   (otf2-tools 3.0.2, Debian)
// gives ENTER 42, LEAVE 42, MPI_SEND 16, MPI_RECV 16, PROGRAM_BEGIN 2, PROGRAM_END 2, and
//   otf2-print -G traces.otf2 shows CLOCK_PROPERTIES "Ticks per Seconds: 2095197216, Global
// Offset: 7397466976977800", 2 locations "Master thread" in groups "MPI Rank 0/1" on node
// "quartz10", 235 REGION definitions, COMM 1 "MPI_COMM_WORLD" over both locations; the first
// MPI_SEND is on location 0 at 7397467382760060 to receiver 1, tag 10, 16384 bytes, and each rank
// sends 16384 * 2^k bytes for k = 0..7.
TEST_CASE("otf2 reader: the Score-P ping-pong trace has the events otf2-print counts") {
  const auto a = workloads::read_otf2_archive(kSample);
  CHECK(a.anchor == kSample + "/traces.otf2");
  CHECK(a.ticks_per_second == 2095197216ULL);
  CHECK(a.global_offset == 7397466976977800ULL);
  REQUIRE(a.locations.size() == 2);
  for (int i = 0; i < 2; ++i) {
    const auto& l = a.locations[static_cast<std::size_t>(i)];
    CHECK(l.id == static_cast<std::uint64_t>(i));
    CHECK(l.name == "Master thread");
    CHECK(l.type == "cpu_thread");
    CHECK(l.group_name == fmt::format("MPI Rank {}", i));
    CHECK(l.group_type == "process");
    CHECK(l.node == "quartz10");
    CHECK(l.events == 60);
  }
  CHECK(a.regions.size() == 235);
  const auto n = counts(a);
  CHECK(n.at(workloads::Otf2EventKind::enter) == 42);
  CHECK(n.at(workloads::Otf2EventKind::leave) == 42);
  CHECK(n.at(workloads::Otf2EventKind::send) == 16);
  CHECK(n.at(workloads::Otf2EventKind::recv) == 16);
  CHECK(n.count(workloads::Otf2EventKind::collective_end) == 0);
  CHECK(a.ignored.at("program_begin") == 2);
  CHECK(a.ignored.at("program_end") == 2);
  CHECK(a.warnings.size() == 2);  // the two ignored kinds, said in words

  const auto& world = a.comms.at(1);
  CHECK(world.name == "MPI_COMM_WORLD");
  CHECK(world.locations == std::vector<std::uint64_t>{0, 1});

  // The first send, with the local-to-global id mappings of Score-P's per-location .def files applied.
  const workloads::Otf2Event* first = nullptr;
  std::map<std::uint64_t, std::uint64_t> bytes_sent;
  for (const auto& e : a.events) {
    if (e.kind != workloads::Otf2EventKind::send) continue;
    if (first == nullptr) first = &e;
    bytes_sent[e.location] += e.bytes;
    CHECK(e.comm == 1);
  }
  REQUIRE(first != nullptr);
  CHECK(first->location == 0);
  CHECK(first->time == 7397467382760060ULL - 7397466976977800ULL);
  CHECK(first->peer == 1);
  CHECK(first->tag == 10);
  CHECK(first->bytes == 16384);
  CHECK(bytes_sent[0] == 16384ULL * 255);
  CHECK(bytes_sent[1] == 16384ULL * 255);
  // MPI regions by name: every MPI_Send region encloses exactly one MPI_SEND event.
  int send_regions = 0;
  for (const auto& e : a.events) {
    if (e.kind == workloads::Otf2EventKind::enter && a.regions.at(e.region).name == "MPI_Send") ++send_regions;
  }
  CHECK(send_regions == 16);
  CHECK(a.regions.at(first->region).paradigm.empty() == false);
}

TEST_CASE("otf2 reader: a missing archive, a directory without an anchor and a non-OTF2 file are InputErrors") {
  CHECK_THROWS_AS(workloads::read_otf2_archive("/nonexistent/traces.otf2"), InputError);
  const fs::path dir = fs::temp_directory_path() / fmt::format("commstack-otf2-empty-{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  CHECK_THROWS_WITH_AS(workloads::read_otf2_archive(dir.string()), doctest::Contains("expected an OTF2 anchor file"),
                       InputError);
  write_bytes(dir / "traces.otf2", "{\"traceEvents\": []}\n");
  CHECK_THROWS_WITH_AS(workloads::read_otf2_archive(dir.string()), doctest::Contains("not a readable OTF2 archive"),
                       InputError);
  fs::remove_all(dir);
}

TEST_CASE("otf2 reader: an event limit is an InputError naming the limit") {
  CHECK_THROWS_WITH_AS(workloads::read_otf2_archive(kSample, 10), doctest::Contains("more than 10 events"), InputError);
}

// Fuzz-like: every file of the real archive truncated at several lengths and with bytes
// overwritten at several places (a fixed-seed generator, so the run is reproducible). Each damaged
// archive must read or raise InputError; a crash or another exception fails the test. Bounded:
// a few hundred reads of a 12 kB archive.
TEST_CASE("otf2 reader: truncated and mutated archives give InputError or a result, never a crash") {
  const fs::path work = fs::temp_directory_path() / fmt::format("commstack-otf2-fuzz-{}", getpid());
  std::uint64_t state = 0x9e3779b97f4a7c15ULL;
  const auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  const std::vector<std::string> files = {"traces.otf2", "traces.def", "traces/0.evt", "traces/1.evt", "traces/1.def"};
  int reads = 0, errors = 0;
  const auto started = std::chrono::steady_clock::now();
  for (const auto& name : files) {
    const std::string original = read_bytes(fs::path(kSample) / name);
    REQUIRE(!original.empty());
    std::vector<std::string> variants;
    for (std::size_t cut : {std::size_t{0}, std::size_t{1}, original.size() / 4, original.size() / 2, original.size() - 1}) {
      variants.push_back(original.substr(0, cut));
    }
    for (int m = 0; m < 40; ++m) {
      std::string v = original;
      const int flips = 1 + static_cast<int>(next() % 4);
      for (int f = 0; f < flips; ++f) v[next() % v.size()] = static_cast<char>(next() & 0xff);
      variants.push_back(std::move(v));
    }
    for (const auto& v : variants) {
      fs::remove_all(work);
      fs::copy(kSample, work, fs::copy_options::recursive);
      write_bytes(work / name, v);
      ++reads;
      try {
        const auto a = workloads::read_otf2_archive(work.string());
        CHECK(a.ticks_per_second > 0);
      } catch (const InputError& e) {
        ++errors;
        CHECK(std::string(e.what()).find(work.string()) != std::string::npos);  // names the file
      }
    }
  }
  fs::remove_all(work);
  CHECK(reads == 225);
  CHECK(errors > 0);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(60));
}
