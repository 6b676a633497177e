// Importers on broken input: truncated JSON or gzip, missing fields, unknown event kinds, ranks
// that do not match. Each gives one InputError naming the file (and where), or a warning.
#include <doctest/doctest.h>

#include "approx.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <zlib.h>

#include <fmt/format.h>

#include "common/error.hpp"
#include "workloads/importers/kineto.hpp"
#include "workloads/importers/load_trace.hpp"

using namespace commstack;
using namespace commstack::workloads;
namespace fs = std::filesystem;

namespace {

std::string temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("commstack-import-" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A minimal Kineto trace of one rank: one step, one launch, one kernel.
std::string tiny(int rank, int world, const std::string& extra_event = "") {
  return R"({"distributedInfo": {"rank": )" + std::to_string(rank) + R"(, "world_size": )" + std::to_string(world) +
         R"(}, "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 500},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1010, "dur": 5, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1020, "dur": 100, "args": {"correlation": 7, "stream": 7}})" +
         extra_event + "\n]}";
}

bool has_warning(const ImportedTrace& t, const std::string& part) {
  for (const auto& w : t.warnings) {
    if (w.find(part) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("import robustness: the tiny trace imports: a launch, a kernel, CPU time around it") {
  const auto d = temp_dir("tiny");
  write(d + "/rank-0.json", tiny(0, 1));
  const auto t = importers::load_trace(d);
  CHECK(t.traced_s == approx(500e-6));
  // cpu gap 10 us, launch 5 us, cpu tail 485 us, the kernel.
  REQUIRE(t.graph.ops.size() == 4);
  double host = 0;
  for (const Op& op : t.graph.ops) host += op.host ? op.measured_s : 0;
  CHECK(host == approx(500e-6));
}

TEST_CASE("import robustness: truncated JSON names the file and the byte") {
  const auto d = temp_dir("truncated");
  const std::string full = tiny(0, 1);
  write(d + "/rank-0.json", full.substr(0, full.size() / 2 + 40));
  CHECK_THROWS_WITH_AS(importers::import_kineto({d + "/rank-0.json"}), doctest::Contains("rank-0.json: invalid JSON at byte"),
                       InputError);
}

TEST_CASE("import robustness: a truncated gzip file is reported, not half-read") {
  const auto d = temp_dir("gz");
  const std::string full = tiny(0, 1);
  const std::string gz = d + "/rank-0.json.gz";
  gzFile f = gzopen(gz.c_str(), "wb");
  gzwrite(f, full.data(), static_cast<unsigned>(full.size()));
  gzclose(f);
  const auto size = fs::file_size(gz);
  fs::resize_file(gz, size - 12);  // drop the gzip trailer and some data
  CHECK_THROWS_WITH_AS(importers::import_kineto({gz}),
                       doctest::Contains("the compressed file is corrupt or truncated"), InputError);
}

TEST_CASE("import robustness: events without ts/dur and of unknown kinds are skipped with a warning") {
  const auto d = temp_dir("fields");
  write(d + "/rank-0.json", tiny(0, 1, R"(,
  {"ph": "X", "cat": "kernel", "name": "no_ts", "dur": 3},
  {"ph": "X", "cat": "mystery", "name": "x", "ts": 1100, "dur": 3},
  {"ph": "X", "cat": "kernel", "name": "negative", "ts": 1100, "dur": -3},
  {"ph": "X", "cat": "kernel", "name": "absurd", "ts": 1100, "dur": 1e300})"));
  const auto t = importers::load_trace(d);
  CHECK(has_warning(t, "1 complete events without a numeric ts/dur skipped"));
  CHECK(has_warning(t, "1 complete events with a negative dur skipped"));
  CHECK(has_warning(t, "1 complete events with a dur of 1e12 us or more, or a ts beyond 1e18 us skipped"));
  CHECK(t.traced_s == approx(500e-6));  // the absurd event does not stretch the trace
  CHECK(has_warning(t, "1 events of unknown category 'mystery' skipped"));
  CHECK(t.graph.ops.size() == 4);
}

TEST_CASE("import robustness: two files of one rank, and a rank beyond the world size") {
  const auto d = temp_dir("ranks");
  write(d + "/a.json", tiny(1, 2));
  write(d + "/b.json", tiny(1, 2));
  CHECK_THROWS_WITH_AS(importers::load_trace(d), doctest::Contains("are both rank 1"), InputError);
  const auto e = temp_dir("ranks2");
  write(e + "/a.json", tiny(3, 2));
  CHECK_THROWS_WITH_AS(importers::load_trace(e), doctest::Contains("rank 3 / world_size 2 out of range"), InputError);
  // A rank or world size that is present but no count is refused, not replaced by the file name's.
  const auto f = temp_dir("ranks3");
  std::string bad = tiny(0, 2);
  bad.replace(bad.find(R"("rank": 0)"), 9, R"("rank": -1)");
  write(f + "/rank-0.json", bad);
  CHECK_THROWS_WITH_AS(importers::load_trace(f),
                       doctest::Contains("distributedInfo.rank is -1: expected the rank of the file"),
                       InputError);
  write(f + "/rank-0.json", tiny(0, 0));
  CHECK_THROWS_WITH_AS(importers::load_trace(f),
                       doctest::Contains("distributedInfo.world_size is 0: expected the number of ranks"),
                       InputError);
}

TEST_CASE("import robustness: not a trace, an empty directory, a missing path") {
  const auto d = temp_dir("notrace");
  write(d + "/README.md", "# notes\n");
  CHECK_THROWS_WITH_AS(importers::load_trace(d + "/README.md"), doctest::Contains("not a Kineto"), InputError);
  const auto e = temp_dir("empty");
  CHECK_THROWS_WITH_AS(importers::load_trace(e), doctest::Contains("the directory has no files"), InputError);
  CHECK_THROWS_WITH_AS(importers::load_trace(e + "/nothing.json"), doctest::Contains("no such file or directory"), InputError);
}

TEST_CASE("import robustness: a collective on a group whose other traced member never calls it") {
  const auto d = temp_dir("unmatched");
  const std::string nccl = R"(,
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1200, "dur": 5, "args": {"correlation": 9}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 8, "ts": 1210, "dur": 50,
   "args": {"correlation": 9, "stream": 8, "Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024,
            "dtype": "Float", "Group size": 2, "Process Group Name": "0", "Process Group Ranks": "[0, 1]"}})";
  write(d + "/rank-0.json", tiny(0, 2, nccl));
  write(d + "/rank-1.json", tiny(1, 2));
  const auto t = importers::load_trace(d);
  CHECK(has_warning(t, "rank 0: 1 of 1 calls on pg 0 (2 ranks) have no counterpart"));
  for (const Op& op : t.graph.ops) CHECK(op.kind != OpKind::collective);
}

TEST_CASE("import robustness: an NCCL log line whose device index overflows an int names the line") {
  // Found by the importer fuzzer (nccl_log, generator seeds 1 and 2): the device index was read
  // outside the range check of the COLL line's other numbers, so it escaped as std::out_of_range.
  const auto d = temp_dir("nccl-dev-overflow");
  write(d + "/rank-0.log",
        "h:1:2 [99999999999] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x2 count 1024 datatype 7 "
        "op 0 root 0 "
        "comm 0x3 [nranks=2] stream 0x4\n");
  CHECK_THROWS_WITH_AS(importers::load_trace(d + "/rank-0.log"),
                       doctest::Contains("rank-0.log:1: a number in the COLL line is out of range"),
                       InputError);
}

TEST_CASE("import robustness: an NCCL log's root or peer outside its communicator names the line") {
  const auto d = temp_dir("nccl-root");
  const auto line = [](const char* op, int root) {
    return fmt::format(
        "h:1:2 [0] NCCL INFO {}: opCount 0 sendbuff 0x1 recvbuff 0x2 count 1024 datatype 7 op 0 root {} "
        "comm 0x3 [nranks=2] stream 0x4\n",
        op, root);
  };
  write(d + "/rank-0.log", line("AllReduce", 0) + line("Broadcast", 7));
  CHECK_THROWS_WITH_AS(
      importers::load_trace(d + "/rank-0.log"),
      doctest::Contains(
          "rank-0.log:2: Broadcast root 7 is not a rank of its communicator (nranks=2); expected 0-1"),
      InputError);
  write(d + "/rank-0.log", line("Send", -1));
  CHECK_THROWS_WITH_AS(importers::load_trace(d + "/rank-0.log"),
                       doctest::Contains("rank-0.log:1: Send peer -1 is not a rank"), InputError);
  // A line that mentions opCount but is no readable COLL line is skipped, and the warning says where.
  write(d + "/rank-0.log", line("AllReduce", 0) + "h:1:2 [0] NCCL INFO AllReduce: opCount 1 count -5\n");
  const auto t = importers::load_trace(d + "/rank-0.log");
  CHECK(has_warning(t, "1 line(s) mentioning opCount are not COLL lines this reader can read"));
  CHECK(has_warning(t, "rank-0.log:2"));
}

TEST_CASE("import robustness: a call the ranks disagree on (collective or size) keeps its traced duration") {
  // Rank 0's first call on the 2-rank group is a 256 MiB all-reduce, rank 1's a 4 KiB all-gather:
  // one call cannot be both. Each rank's version used to be simulated on its own, ending the call at
  // different times for the two ranks.
  const auto d = temp_dir("disagree");
  write(
      d + "/two-ranks.log",
      "h:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x2 count 67108864 datatype 7 op 0 "
      "root 0 comm 0xa [nranks=2] stream 0x5\n"
      "h:1:2 [1] NCCL INFO AllGather: opCount 0 sendbuff 0x1 recvbuff 0x2 count 1024 datatype 7 op 0 root 0 "
      "comm 0xb [nranks=2] stream 0x6\n");
  const auto t = importers::load_trace(d + "/two-ranks.log");
  CHECK(has_warning(t, "call 0: rank 0 runs all_reduce of 268435456 B, rank 1 all_gather of 8192 B"));
  for (const Op& op : t.graph.ops) CHECK(op.kind != OpKind::collective);
}

TEST_CASE("import robustness: an element count that would wrap the byte count is refused") {
  const auto d = temp_dir("nccl-count-overflow");
  write(d + "/rank-0.log",
        "h:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x2 count 4611686018427387904 "
        "datatype 7 "
        "op 0 root 0 comm 0x3 [nranks=2] stream 0x4\n");
  CHECK_THROWS_WITH_AS(importers::load_trace(d + "/rank-0.log"),
                       doctest::Contains("rank-0.log:1: count 4611686018427387904 is out of range"),
                       InputError);
}

// Chakra JSON fields the importer cannot read are refused with the field, its value and what
// was expected, never replaced by a default (an unknown NodeType was a GPU kernel, a negative
// runtime 0 s, ngpus 0 ignored, a send to a rank outside the trace kept its traced time).
TEST_CASE("import robustness: a Chakra node with a field it cannot read names the field") {
  const auto d = temp_dir("chakra-fields");
  const auto error_of = [&](const std::string& top, const std::string& node) {
    const std::string path = d + "/chakra.0.json";
    write(path, "{" + top + R"("workload_graph": [{"Id": 3, )" + node + "}]}");
    try {
      (void)importers::load_trace(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string ok_top = R"("ngpus": 2, )";
  CHECK(error_of(ok_top, R"("NodeType": 4, "runtime": 5)") == "(no error)");
  CHECK(error_of(ok_top, R"("NodeType": 99, "runtime": 5)")
            .find(R"("workload_graph"[0]: node Id 3: "NodeType" is 99: expected 1-7)") != std::string::npos);
  CHECK(error_of(ok_top, R"("NodeType": 0)").find(R"("NodeType" is 0: expected 1-7)") != std::string::npos);
  CHECK(error_of(ok_top, R"("NodeType": 4.5)").find(R"("NodeType" is 4.5: expected an integer)") !=
        std::string::npos);
  CHECK(error_of(ok_top, R"("NodeType": 4, "runtime": -5)")
            .find(R"("runtime" is -5: expected microseconds >= 0)") != std::string::npos);
  CHECK(error_of(ok_top, R"("NodeType": 4, "data_deps": [1, "x"])")
            .find(R"("data_deps" holds "x": expected node Ids)") != std::string::npos);
  CHECK(error_of(ok_top, R"("NodeType": 4, "is_cpu_op": 1)")
            .find(R"("is_cpu_op" is 1: expected true or false)") != std::string::npos);
  CHECK(error_of(ok_top, R"("NodeType": 7, "comm_type": 10, "comm_size": 8)")
            .find(R"("comm_type" is 10: expected 0-9)") != std::string::npos);
  CHECK(error_of(ok_top, R"("NodeType": 7, "comm_type": 0, "comm_size": -8)")
            .find(R"("comm_size" is -8: expected a value >= 0)") != std::string::npos);
  CHECK(error_of(ok_top, R"("NodeType": 5, "comm_src": 0, "comm_dst": 2, "comm_size": 8)")
            .find(R"(node Id 3: "comm_dst" is 2: expected a rank below 2)") != std::string::npos);
  CHECK(error_of(ok_top, R"("NodeType": 4, "data_deps": [3])").find("node Id 3 depends on itself") !=
        std::string::npos);
  for (const char* ngpus : {"0", "-3", "\"2\"", "2.5"}) {
    CAPTURE(ngpus);
    CHECK(error_of(std::string(R"("ngpus": )") + ngpus + ", ", R"("NodeType": 4)")
              .find(std::string(R"("ngpus" is )") + ngpus + ": expected the number of GPUs") !=
          std::string::npos);
  }
}

// QA: one NCCL INFO line of tens of thousands of characters overflowed the stack inside std::regex
// (it recurses once per character a \S+ takes). Such lines are skipped before any regex runs, and
// said: alone they leave no COLL line, in a usable log they are a warning.
TEST_CASE("import robustness: an NCCL log line longer than 4096 characters is skipped, not a crash") {
  const auto d = temp_dir("nccl-long-line");
  const std::string coll =
      "h:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x2 count 1024 datatype 7 op 0 root 0 "
      "comm 0x3 [nranks=1] stream 0x4\n";
  const std::string longest = "h:1:1 [0] NCCL INFO " + std::string(4096 - 20, 'x') + "\n";
  const std::string too_long = "h:1:1 [0] NCCL INFO " + std::string(100000, 'x') + "\n";
  write(d + "/only.log", too_long);
  const std::string skipped =
      "only.log: no NCCL COLL lines (\"<Op>: opCount ... count ... datatype ... comm ... [nranks=N]\"); "
      "record "
      "the log with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL (1 NCCL INFO line(s) longer than 4096 characters "
      "(not NCCL's output: a corrupt or mixed log) were skipped: " +
      d + "/only.log:1)";
  CHECK_THROWS_WITH_AS(importers::load_trace(d + "/only.log"), doctest::Contains(skipped.c_str()),
                       InputError);
  write(d + "/mixed.log", coll + too_long + longest + coll);
  const auto t = importers::load_trace(d + "/mixed.log");
  CHECK(has_warning(t, "1 NCCL INFO line(s) longer than 4096 characters"));
  CHECK(has_warning(t, "mixed.log:2"));
  CHECK_FALSE(has_warning(t, "mixed.log:3"));  // 4096 characters: still read
}

// QA: a Kineto event whose args nest 100,000 arrays deep crashed the replay (the value is copied
// recursively). docs/cli.md: every JSON input refuses nesting deeper than 256 levels; the error
// names the file and the element. 253 levels of args (256 with the document's own) are read.
TEST_CASE("import robustness: a trace nested deeper than 256 levels is refused, naming the element") {
  const auto d = temp_dir("deep-json");
  const auto nested = [](int depth) {
    return ", \"args\": {\"x\": " + std::string(static_cast<std::size_t>(depth), '[') +
           std::string(static_cast<std::size_t>(depth), ']') + "}";
  };
  const auto kineto = [&](int depth) {
    return R"({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 500},
  {"ph": "X", "cat": "cpu_op", "name": "deep", "pid": 1, "tid": 1, "ts": 1010, "dur": 5)" +
           nested(depth) + R"(},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1020, "dur": 100, "args": {"stream": 7}}]})";
  };
  write(d + "/ok.json", kineto(253));
  CHECK_NOTHROW(importers::load_trace(d + "/ok.json"));
  for (int depth : {254, 300, 100000}) {
    CAPTURE(depth);
    write(d + "/deep.json", kineto(depth));
    const std::string error =
        d +
        "/deep.json: JSON nested more than 256 levels deep in \"traceEvents\"[1]; expected "
        "a trace of a few levels";
    CHECK_THROWS_WITH_AS(importers::load_trace(d + "/deep.json"), error.c_str(), InputError);
  }
  // Chakra: in a node, and in a top-level member outside the streamed array.
  write(d + "/chakra.0.json",
        R"({"ngpus": 1, "workload_graph": [{"Id": 1, "NodeType": 4, "runtime": 5)" + nested(100000) + "}]}");
  CHECK_THROWS_WITH_AS(importers::load_trace(d + "/chakra.0.json"),
                       doctest::Contains("JSON nested more than 256 levels deep in \"workload_graph\"[0]"),
                       InputError);
  write(d + "/chakra.0.json", R"({"meta": )" + std::string(1000, '[') + std::string(1000, ']') +
                                  R"(, "ngpus": 1, "workload_graph": []})");
  CHECK_THROWS_WITH_AS(importers::load_trace(d + "/chakra.0.json"),
                       doctest::Contains("JSON nested more than 256 levels deep in \"meta\""), InputError);
}

// QA: a key written twice in a Kineto or Chakra trace was read (the last one won), though
// docs/cli.md says every JSON input refuses it. The streaming reader names the file, the key and
// the object it is in.
TEST_CASE("import robustness: a key written twice in a streamed trace is refused, naming the key") {
  const auto d = temp_dir("dup-key");
  std::string rank = tiny(0, 2);
  rank.replace(rank.find(R"("rank": 0)"), 9, R"("rank": 0, "rank": 1)");
  write(d + "/rank.json", rank);
  CHECK_THROWS_WITH_AS(importers::load_trace(d + "/rank.json"),
                       (d + "/rank.json: key \"rank\" appears twice in the object at /distributedInfo; JSON "
                            "keeps only the last one, so remove the other")
                           .c_str(),
                       InputError);
  std::string events = tiny(0, 1);
  events.insert(events.size() - 1, R"(, "traceEvents": [])");
  write(d + "/events.json", events);
  CHECK_THROWS_WITH_AS(
      importers::load_trace(d + "/events.json"),
      doctest::Contains("events.json: key \"traceEvents\" appears twice in the top-level object"),
      InputError);
  std::string in_event = tiny(0, 1);
  in_event.replace(in_event.find(R"("correlation": 7, "stream": 7)"), 29,
                   R"("correlation": 7, "stream": 7, "stream": 8)");
  write(d + "/event.json", in_event);
  CHECK_THROWS_WITH_AS(
      importers::load_trace(d + "/event.json"),
      doctest::Contains("key \"stream\" appears twice in the object at /traceEvents[2]/args"), InputError);
  write(d + "/chakra.0.json", R"({"ngpus": 1, "workload_graph": [{"Id": 1, "NodeType": 4, "Id": 2}]})");
  CHECK_THROWS_WITH_AS(importers::load_trace(d + "/chakra.0.json"),
                       doctest::Contains("key \"Id\" appears twice in the object at /workload_graph[0]"),
                       InputError);
}

// QA: a ProfilerStep of dur 0, or one whose ts lies before every other event, selected a window
// with no ops, and replay printed "replayed 0.000 ms" (-100 %). The step is refused, naming the
// file and the step.
TEST_CASE(
    "import robustness: a selected step that holds no GPU ops is refused, naming the file and the step") {
  const auto d = temp_dir("empty-step");
  std::string zero = tiny(0, 1);
  zero.replace(zero.find(R"("ts": 1000, "dur": 500)"), 22, R"("ts": 1000, "dur": 0)");
  write(d + "/rank-0.json", zero);
  CHECK_THROWS_WITH_AS(
      importers::load_trace(d + "/rank-0.json"),
      (d + "/rank-0.json: the selected step 'ProfilerStep#1' (ts 1000 us, dur 0 us) holds no GPU "
           "ops: no kernel, memcpy or memset is launched inside it; expected the span of one "
           "iteration (check the step's ts and dur, or pick another with --iteration)")
          .c_str(),
      InputError);
  std::string early = tiny(0, 1);
  early.replace(early.find(R"("ts": 1000, "dur": 500)"), 22, R"("ts": -1000, "dur": 500)");
  write(d + "/rank-0.json", early);
  CHECK_THROWS_WITH_AS(importers::load_trace(d + "/rank-0.json"),
                       doctest::Contains("'ProfilerStep#1' (ts -1000 us, dur 500 us) holds no GPU ops"),
                       InputError);
}

// QA: an NCCL init line's rank at or beyond its nranks (rank 5 nranks 2 made a world of 6), a
// negative rank (the line was ignored), or an nranks its COLL lines contradict was read silently.
TEST_CASE(
    "import robustness: an NCCL init line outside its communicator, or contradicting its COLL lines, names "
    "the line") {
  const auto d = temp_dir("nccl-init");
  const auto init = [](int dev, const char* comm, const char* rank, int nranks) {
    return fmt::format(
        "h:{}:{} [{}] NCCL INFO comm {} rank {} nranks {} cudaDev {} busId 0 - Init COMPLETE\n", dev + 1,
        dev + 1, dev, comm, rank, nranks, dev);
  };
  const auto coll = [](int dev, const char* comm, int nranks) {
    return fmt::format(
        "h:{}:{} [{}] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x2 count 1024 datatype 7 op 0 "
        "root 0 "
        "comm {} [nranks={}] stream 0x3\n",
        dev + 1, dev + 1, dev, comm, nranks);
  };
  const std::string colls = coll(0, "0xa", 2) + coll(1, "0xb", 2);
  write(d + "/ok.log", init(0, "0xa", "0", 2) + init(1, "0xb", "1", 2) + colls);
  CHECK(importers::load_trace(d + "/ok.log").graph.ops.size() == 2);
  write(d + "/oob.log", init(0, "0xa", "0", 2) + init(1, "0xb", "5", 2) + colls);
  CHECK_THROWS_WITH_AS(
      importers::load_trace(d + "/oob.log"),
      doctest::Contains(
          "oob.log:2: comm 0xb rank 5 is not a rank of its communicator (nranks 2); expected 0-1"),
      InputError);
  write(d + "/neg.log", init(0, "0xa", "0", 2) + init(1, "0xb", "-1", 2) + colls);
  CHECK_THROWS_WITH_AS(importers::load_trace(d + "/neg.log"),
                       doctest::Contains("neg.log:2: comm 0xb rank -1 is not a rank of its communicator"),
                       InputError);
  write(d + "/mismatch.log",
        init(0, "0xa", "0", 2) + init(1, "0xb", "1", 2) + coll(0, "0xa", 4) + coll(1, "0xb", 4));
  CHECK_THROWS_WITH_AS(importers::load_trace(d + "/mismatch.log"),
                       doctest::Contains(("mismatch.log:3: comm 0xa [nranks=4] contradicts its init line " +
                                          d + "/mismatch.log:1 (nranks 2)")
                                             .c_str()),
                       InputError);
}

// QA: a Chakra file whose rank is not below its own "ngpus" widened the world, where Kineto's
// rank >= world_size is an error.
TEST_CASE("import robustness: a Chakra file whose rank is not below its ngpus is refused") {
  const auto d = temp_dir("chakra-rank");
  write(d + "/chakra.5.json", R"({"ngpus": 2, "workload_graph": [{"Id": 1, "NodeType": 4, "runtime": 5}]})");
  CHECK_THROWS_WITH_AS(
      importers::load_trace(d + "/chakra.5.json"),
      doctest::Contains("chakra.5.json: rank 5 is not below its \"ngpus\" 2; expected a rank 0-1"),
      InputError);
  write(d + "/chakra.5.json", R"({"ngpus": 6, "workload_graph": [{"Id": 1, "NodeType": 4, "runtime": 5}]})");
  CHECK_NOTHROW(importers::load_trace(d + "/chakra.5.json"));
}

// QA: a Send and the Recv matched with it that give different counts were replayed without a word.
TEST_CASE("import robustness: an NCCL Send/Recv pair of different sizes is warned, naming both lines") {
  const auto d = temp_dir("nccl-p2p-size");
  const auto p2p = [](int dev, const char* op, int count, int peer) {
    return fmt::format(
        "h:{}:{} [{}] NCCL INFO {}: opCount 0 sendbuff 0x1 recvbuff 0x2 count {} datatype 7 op 0 root {} "
        "comm 0x{} [nranks=2] stream 0x3\n",
        dev + 1, dev + 1, dev, op, count, peer, dev + 10);
  };
  write(d + "/same.log", p2p(0, "Send", 1024, 1) + p2p(1, "Recv", 1024, 0));
  CHECK_FALSE(has_warning(importers::load_trace(d + "/same.log"), "Send/Recv pair"));
  write(d + "/differ.log", p2p(0, "Send", 1024, 1) + p2p(1, "Recv", 4096, 0));
  const auto t = importers::load_trace(d + "/differ.log");
  CHECK(has_warning(t, "1 Send/Recv pair(s) matched as one transfer move different sizes"));
  CHECK(has_warning(
      t, "differ.log:1 Send count 1024 (4096 B) and " + d + "/differ.log:2 Recv count 4096 (16384 B)"));
}
