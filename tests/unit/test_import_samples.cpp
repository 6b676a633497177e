// Importers on the published sample traces (workloads/importers/samples/PROVENANCE.md): what
// each trace says must come out of the op graph (ranks, iteration, sizes, process groups).
#include <doctest/doctest.h>

#include "approx.hpp"

#include <algorithm>
#include <string>

#include "common/error.hpp"
#include "workloads/importers/load_trace.hpp"

using namespace commstack;
using namespace commstack::workloads;

namespace {
const std::string kSamples = std::string(COMMSTACK_SOURCE_DIR) + "/workloads/importers/samples/";

bool has_warning(const ImportedTrace& t, const std::string& part) {
  return std::any_of(t.warnings.begin(), t.warnings.end(), [&](const std::string& w) { return w.find(part) != std::string::npos; });
}
}  // namespace

TEST_CASE("import kineto: HTA 2-rank A100 trace, last ProfilerStep, NCCL collectives with sizes and groups") {
  const auto t = importers::load_trace(kSamples + "kineto-hta-nccl-2gpu");
  CHECK(t.format == "kineto");
  CHECK(t.iteration == "ProfilerStep#6");
  CHECK(t.device == "NVIDIA A100-PG509-200");
  CHECK(t.graph.world == 2);  // distributedInfo.world_size
  REQUIRE(t.graph.ranks == std::vector<int>{0});
  // ProfilerStep#6 lasts 224936.243 us; its GPU work ends inside it.
  CHECK(t.traced_s == approx(0.224936243).epsilon(1e-6));
  int allreduce = 0, broadcast = 0;
  bool seen_26mb = false;
  for (const Op& op : t.graph.ops) {
    if (op.kind != OpKind::collective) continue;
    if (op.collective == Collective::broadcast) ++broadcast;
    else ++allreduce;
    CHECK((op.collective == Collective::all_reduce || op.collective == Collective::broadcast));
    const auto& c = t.graph.communicators[static_cast<std::size_t>(op.communicator)];
    CHECK(c.imported);
    CHECK(c.ranks == std::vector<int>{0, 1});  // "Process Group Ranks": "[0, 1]"
    seen_26mb = seen_26mb || op.bytes == 6637568ULL * 4;  // In msg nelems 6637568, dtype Float
  }
  CHECK(allreduce == 5);  // step 6 issues 5 all-reduces and 2 broadcasts
  CHECK(broadcast == 2);
  CHECK(seen_26mb);
  CHECK(!has_warning(t, "collective 'broadcast' not modelled"));
  check_graph(t.graph);
  REQUIRE(t.traced_start_s.size() == t.graph.ops.size());
}

TEST_CASE("import kineto: an iteration asked by number, and one the trace does not have") {
  importers::LoadOptions o;
  o.iteration = "5";
  const auto t = importers::load_trace(kSamples + "kineto-hta-nccl-2gpu", o);
  CHECK(t.iteration == "ProfilerStep#5");
  CHECK(t.traced_s == approx(0.219726905).epsilon(1e-6));
  o.iteration = "9";
  CHECK_THROWS_WITH_AS(importers::load_trace(kSamples + "kineto-hta-nccl-2gpu", o),
                       doctest::Contains("iteration 'ProfilerStep#9' not in the trace; it has ProfilerStep#4, ProfilerStep#5, ProfilerStep#6"),
                       InputError);
}

TEST_CASE("import kineto: 2 of 128 ranks, NCCL kernels without metadata keep their traced duration") {
  const auto t = importers::load_trace(kSamples + "kineto-hta-sampled-128gpu");
  CHECK(t.graph.world == 128);
  CHECK(t.graph.ranks == std::vector<int>{0, 1});
  CHECK(t.iteration == "ProfilerStep#552");
  CHECK(t.traced_iteration_s.at(1) >= 0.630639);  // the step span of rank 1
  CHECK(has_warning(t, "5 NCCL kernel(s) keep their traced duration: no collective name"));
  for (const Op& op : t.graph.ops) CHECK(op.kind != OpKind::collective);
}

TEST_CASE("import chakra: feeder JSON nodes, dependencies and the ngpus communicator") {
  const auto t = importers::load_trace(kSamples + "chakra-feeder/small_chakra.0.json");
  CHECK(t.format == "chakra");
  CHECK(t.graph.world == 8);  // "ngpus": 8
  REQUIRE(t.graph.ops.size() == 7);
  // Node 435 (NCCL broadcast kernel, 28 us) depends on nodes 432, 216 and 217 and on its ctrl dep
  // 434, which is not in the file (warned).
  const auto it = std::find_if(t.graph.ops.begin(), t.graph.ops.end(),
                               [](const Op& op) { return std::string(op.name).rfind("ncclKernel_Broadcast", 0) == 0; });
  REQUIRE(it != t.graph.ops.end());
  CHECK(it->measured_s == approx(28e-6));
  CHECK(it->deps.size() == 3);
  CHECK(has_warning(t, "dependencies on nodes not in the file ignored"));
}

TEST_CASE("import nccl log: AllReduce lines of two GPUs matched by opCount") {
  const auto t = importers::load_trace(kSamples + "nccl-log-203");
  CHECK(t.format == "nccl-log");
  CHECK(t.graph.ranks == std::vector<int>{0, 1});
  std::vector<std::uint64_t> bytes;
  for (const Op& op : t.graph.ops) {
    REQUIRE(op.kind == OpKind::collective);
    if (op.rank == 0) bytes.push_back(op.bytes);
  }
  // count x sizeof(float) (datatype 7)
  CHECK(bytes == std::vector<std::uint64_t>{std::uint64_t{64} * 4, std::uint64_t{237184} * 4,
                                            std::uint64_t{386560} * 4});
}

TEST_CASE("import nccl log: an excerpt where the ranks logged different opCounts") {
  const auto t = importers::load_trace(kSamples + "nccl-log-torchtitan");
  CHECK(t.graph.ranks == std::vector<int>{0, 1});
  int matched = 0;
  for (const Op& op : t.graph.ops) matched += op.kind == OpKind::collective ? 1 : 0;
  CHECK(matched == 4);  // opCount e (ReduceScatter) and f (AllGather) on both ranks
  for (const Op& op : t.graph.ops) {
    if (op.kind == OpKind::collective && op.collective == Collective::all_gather) CHECK(op.bytes == 2097152ULL * 4 * 2);
  }
  CHECK(has_warning(t, "rank 0: 2 of 4 calls"));
  CHECK(has_warning(t, "rank 1: 1 of 3 calls"));
}
