// Published-table reader (calibration/fit/published_table): the three copied tables in
// calibration/data/nccl-tests, the busbw -> time conversion, the rounding rule and every refusal.
#include <doctest/doctest.h>

#include "approx.hpp"

#include <string>

#include "calibration/fit/measured_run.hpp"
#include "calibration/fit/published_table.hpp"
#include "common/error.hpp"

using namespace commstack;
using namespace commstack::fit;

namespace {

std::string data(const std::string& name) {
  return std::string(COMMSTACK_SOURCE_DIR) + "/calibration/data/nccl-tests/" + name;
}
const std::string kAzure = "nccl_allreduce_busbw_azure_ndv5_h200_ndv4_a100_1n8g.csv";
const std::string kMscclpp = "nccl-tests_multi-op_a100_ndmv4_mscclpp-docs_PARTIAL.csv";
const std::string kVultr = "nccl_summary_b200_vultr-poc_peak-busbw.csv";

PublishedTableSelection sel(std::optional<std::string> series, std::optional<std::string> config,
                            NcclTestsOp op, std::optional<int> nodes = std::nullopt,
                            std::optional<int> gpus = std::nullopt) {
  PublishedTableSelection s;
  s.series = std::move(series);
  s.config = std::move(config);
  s.op = op;
  s.nodes = nodes;
  s.gpus_per_node = gpus;
  return s;
}

const NcclTestsRow& row_of(const NcclTestsResult& r, std::uint64_t bytes) {
  for (const auto& row : r.rows)
    if (row.size_bytes == bytes) return row;
  FAIL("no row of size " << bytes);
  return r.rows.front();
}

}  // namespace

TEST_CASE("published table: the format comes from the header line, not the file name") {
  CHECK(published_table_format("# c\nmessage_size_label,x_busbw_GBps\n1K,1\n") ==
        PublishedTableFormat::busbw_series);
  CHECK(published_table_format("config,nodes,gpus_per_node,metric,message_size,nccl_allreduce\n") ==
        PublishedTableFormat::multi_op);
  CHECK(published_table_format("collective,ranks,scope,peak_busbw_GBps,at_size\n") ==
        PublishedTableFormat::peak_summary);
  CHECK(published_table_format("#  size count type\n  8 2 float sum -1 1.0\n") == PublishedTableFormat::none);
  CHECK(is_published_table(data(kAzure)));
  CHECK(is_published_table(data(kMscclpp)));
  CHECK(is_published_table(data(kVultr)));
  CHECK_FALSE(is_published_table(data("nccl-tests_all_reduce_h100_1n8g_readme-single-node-test.txt")));
  CHECK_FALSE(is_published_table(data("no-such-file.csv")));
}

TEST_CASE("published table: size labels are the powers of two they abbreviate") {
  CHECK(published_size_label("1K", "t", 1, "f") == 1024);
  CHECK(published_size_label("65K", "t", 1, "f") == 65536);
  CHECK(published_size_label("132K", "t", 1, "f") == 131072);
  CHECK(published_size_label("524K", "t", 1, "f") == 524288);
  CHECK(published_size_label("33M", "t", 1, "f") == 33554432);
  CHECK(published_size_label("268M", "t", 1, "f") == 268435456);
  CHECK(published_size_label("536M", "t", 1, "f") == 536870912);
  CHECK(published_size_label("1G", "t", 1, "f") == 1073741824);
  CHECK(published_size_label("8G", "t", 1, "f") == 8589934592ULL);
  CHECK(published_size_label("16.00 GiB", "t", 1, "f") == 17179869184ULL);
  CHECK(published_size_label("512 MiB", "t", 1, "f") == 536870912);
  CHECK(published_size_label("4096", "t", 1, "f") == 4096);
  CHECK_THROWS_WITH_AS(published_size_label("48K", "t", 7, "message_size"),
                       doctest::Contains("t:7: message_size: '48K' is not an abbreviation of a power of two"),
                       InputError);
  CHECK_THROWS_WITH_AS(published_size_label("1X", "t", 7, "at_size"),
                       doctest::Contains("t:7: at_size: expected a size unit"), InputError);
  CHECK_THROWS_WITH_AS(published_size_label("K", "t", 7, "at_size"),
                       doctest::Contains("expected a size like"), InputError);
  CHECK_THROWS_WITH_AS(published_size_label("0.3 KiB", "t", 7, "at_size"),
                       doctest::Contains("whole number of bytes"), InputError);
}

TEST_CASE("published table: ND A100 v4 all-reduce busbw becomes nccl-tests time through 2(n-1)/n") {
  const auto t =
      load_published_table(data(kAzure), sel("ndv4_a100_busbw_GBps", {}, NcclTestsOp::all_reduce, 1, 8));
  CHECK(t.format == PublishedTableFormat::busbw_series);
  CHECK(t.result.op == NcclTestsOp::all_reduce);
  // 24 sizes 1K..8G; 1K..8K (0.04 .. 0.33 GB/s, printed with 2 decimals) are uncertain by > 1%.
  REQUIRE(t.result.rows.size() == 20);
  REQUIRE(t.notes.size() == 4);
  CHECK(t.notes[0].find("dropped size 1024") != std::string::npos);
  CHECK(t.notes[0].find("12.5%") != std::string::npos);  // 0.005 / 0.04
  CHECK(t.notes[3].find("dropped size 8192") != std::string::npos);
  CHECK(t.result.rows.front().size_bytes == 16384);  // 0.67 GB/s: 0.75% uncertain, kept
  const auto& g1 = row_of(t.result, 1073741824);
  REQUIRE(g1.out_of_place);
  CHECK(g1.out_of_place->busbw_GBps.value() == approx(228.10));
  CHECK(g1.out_of_place->time_us == approx(1073741824.0 * 2 * 7 / 8 / 228.10e3));
  CHECK(g1.out_of_place->algbw_GBps.value() == approx(228.10 * 8 / 14));
  CHECK(row_of(t.result, 65536).out_of_place->time_us == approx(65536.0 * 1.75 / 2.70e3));
  CHECK(row_of(t.result, 8589934592ULL).out_of_place->time_us == approx(8589934592.0 * 1.75 / 231.58e3));
  // The table does not give the ranks: nodes / GPUs per node stay with the run spec.
  CHECK(t.result.n_hosts == 0);
  CHECK_FALSE(t.result.ranks_complete);
}

TEST_CASE("published table: the rounding rule's bound is half the last printed digit over the value") {
  // 0.50 -> 1.0% (kept: not more than the limit), 0.49 -> 1.02% (dropped), 5 -> 10% (no decimals, dropped).
  const char* text = "message_size_label,s_busbw_GBps\n1K,0.50\n2K,0.49\n4K,5\n8K,5.0\n";
  const auto t = parse_published_table(text, "r.csv", sel("s_busbw_GBps", {}, NcclTestsOp::all_gather, 1, 2));
  REQUIRE(t.result.rows.size() == 2);
  CHECK(t.result.rows[0].size_bytes == 1024);
  CHECK(t.result.rows[1].size_bytes == 8192);
  // all-gather on 2 ranks: busbw = algbw x 1/2.
  CHECK(t.result.rows[1].out_of_place->time_us == approx(8192.0 * 0.5 / 5.0e3));
  REQUIRE(t.notes.size() == 2);
  CHECK(t.notes[0] ==
        "r.csv:3: dropped size 2048: s_busbw_GBps GB/s printed as '0.49' is only known to 1.0% (rounding; "
        "the limit is 1%)");
  CHECK(t.notes[1].find("r.csv:4: dropped size 4096") == 0);
  CHECK(t.notes[1].find("10.0%") != std::string::npos);
  CHECK_THROWS_WITH_AS(
      parse_published_table("message_size_label,s_busbw_GBps\n1K,0.04\n", "r.csv",
                            sel("s_busbw_GBps", {}, NcclTestsOp::all_reduce, 1, 8)),
      doctest::Contains("r.csv: the selected series has no point left (1 dropped by the rounding rule)"),
      InputError);
}

TEST_CASE("published table: NDm A100 v4 rows: latency taken as time, busbw through the op's bus factor") {
  const auto ar = load_published_table(data(kMscclpp), sel({}, "2node_8gpu", NcclTestsOp::all_reduce));
  CHECK(ar.format == PublishedTableFormat::multi_op);
  CHECK(ar.result.n_hosts == 2);
  CHECK(ar.result.gpus_per_node == 8);
  CHECK(ar.result.n_ranks == 16);
  CHECK(ar.result.ranks_complete);
  REQUIRE(ar.result.rows.size() == 3);
  CHECK(ar.notes.empty());
  CHECK(ar.result.rows[0].size_bytes == 1024);
  CHECK(ar.result.rows[0].out_of_place->time_us == approx(35.85));
  CHECK(ar.result.rows[1].out_of_place->time_us == approx(1073741824.0 * 2 * 15 / 16 / 183.82e3));
  CHECK(ar.result.rows[2].size_bytes == 4294967296ULL);
  CHECK(ar.result.rows[2].out_of_place->time_us == approx(4294967296.0 * 2 * 15 / 16 / 188.18e3));
  // "allgather" column for op all_gather; (n-1)/n on 2 ranks.
  const auto ag = load_published_table(data(kMscclpp), sel({}, "2node_1gpu", NcclTestsOp::all_gather));
  REQUIRE(ag.result.rows.size() == 2);
  CHECK(ag.result.rows[0].out_of_place->time_us == approx(16.08));
  CHECK(ag.result.rows[1].out_of_place->time_us == approx(1073741824.0 * 0.5 / 15.84e3));
  const auto a2a = load_published_table(data(kMscclpp), sel({}, "1node_8gpu", NcclTestsOp::alltoall, 1, 8));
  CHECK(a2a.result.rows[1].out_of_place->time_us == approx(1073741824.0 * 7 / 8 / 254.69e3));
}

TEST_CASE("published table: B200 Vultr peak summary, one point per collective and scope") {
  const auto ar = load_published_table(data(kVultr), sel({}, "intra-node", NcclTestsOp::all_reduce));
  CHECK(ar.format == PublishedTableFormat::peak_summary);
  CHECK(ar.result.n_hosts == 1);
  CHECK(ar.result.gpus_per_node == 8);
  REQUIRE(ar.result.rows.size() == 1);
  CHECK(ar.result.rows[0].size_bytes == 17179869184ULL);
  CHECK(ar.result.rows[0].out_of_place->time_us == approx(17179869184.0 * 1.75 / 842.91e3));
  // sendrecv: bus factor 1; "sendrecv_v2" is a different row and never matches "sendrecv".
  const auto sr = load_published_table(data(kVultr), sel({}, "inter-node", NcclTestsOp::sendrecv, 2, 8));
  REQUIRE(sr.result.rows.size() == 1);
  CHECK(sr.result.rows[0].size_bytes == 536870912);
  CHECK(sr.result.rows[0].out_of_place->time_us == approx(536870912.0 / 19.82e3));
  // Inter-node: 16 ranks, the node split is the run spec's.
  CHECK(sr.result.n_ranks == 16);
  CHECK(sr.result.n_hosts == 0);
  const auto rs =
      load_published_table(data(kVultr), sel({}, "inter-node", NcclTestsOp::reduce_scatter, 2, 8));
  CHECK(rs.result.rows[0].size_bytes == 8589934592ULL);
  CHECK(rs.result.rows[0].out_of_place->time_us == approx(8589934592.0 * 15 / 16 / 307.91e3));
}

TEST_CASE("published table: selection errors name the file and list what it holds") {
  CHECK_THROWS_WITH_AS(
      load_published_table(data(kAzure), sel("ndv9_busbw_GBps", {}, NcclTestsOp::all_reduce, 1, 8)),
      doctest::Contains("series \"ndv9_busbw_GBps\": no such column (expected one of "
                        "ndv5_h200_busbw_GBps, ndv4_a100_busbw_GBps)"),
      InputError);
  CHECK_THROWS_WITH_AS(load_published_table(data(kAzure), sel({}, {}, NcclTestsOp::all_reduce, 1, 8)),
                       doctest::Contains("say which column with series=NAME"), InputError);
  CHECK_THROWS_WITH_AS(
      load_published_table(data(kAzure), sel("ndv4_a100_busbw_GBps", {}, NcclTestsOp::unknown, 1, 8)),
      doctest::Contains("say which collective with op=NAME"), InputError);
  CHECK_THROWS_WITH_AS(
      load_published_table(data(kAzure), sel("ndv4_a100_busbw_GBps", {}, NcclTestsOp::all_reduce)),
      doctest::Contains("does not say how many ranks ran: pass nodes=N,gpus_per_node=G"), InputError);
  CHECK_THROWS_WITH_AS(
      load_published_table(data(kMscclpp), sel({}, "3node_8gpu", NcclTestsOp::all_reduce)),
      doctest::Contains("config \"3node_8gpu\": no such rows (expected one of 1node_8gpu, 2node_1gpu, "
                        "2node_8gpu)"),
      InputError);
  CHECK_THROWS_WITH_AS(
      load_published_table(data(kMscclpp), sel({}, "1node_8gpu", NcclTestsOp::reduce_scatter)),
      doctest::Contains("op reduce_scatter: no nccl_<op> column for it (expected one of allgather, "
                        "allreduce, alltoall)"),
      InputError);
  CHECK_THROWS_WITH_AS(
      load_published_table(data(kMscclpp), sel({}, "2node_8gpu", NcclTestsOp::all_reduce, 4, 4)),
      doctest::Contains("the table gives 2 nodes x 8 GPUs but the run spec says 4 x 4"), InputError);
  CHECK_THROWS_WITH_AS(
      load_published_table(data(kVultr), sel({}, "inter-node", NcclTestsOp::all_reduce, 1, 8)),
      doctest::Contains("the table gives 16 ranks but nodes x GPUs per node = 1 x 8"), InputError);
  CHECK_THROWS_WITH_AS(
      load_published_table(data(kAzure),
                           sel("ndv4_a100_busbw_GBps", {}, NcclTestsOp::all_reduce, 100000, 100000)),
      doctest::Contains("nodes and GPUs per node must be >= 1 (and at most 1e8 ranks), got 100000 x 100000"),
      InputError);
  CHECK_THROWS_WITH_AS(
      load_published_table(data(kAzure), sel("ndv4_a100_busbw_GBps", {}, NcclTestsOp::all_reduce, 0, 8)),
      doctest::Contains("nodes and GPUs per node must be >= 1"), InputError);
  CHECK_THROWS_WITH_AS(
      load_published_table(data(kVultr), sel({}, "cross-rack", NcclTestsOp::all_reduce)),
      doctest::Contains("config \"cross-rack\": no such scope (expected one of intra-node, inter-node)"),
      InputError);
  CHECK_THROWS_WITH_AS(load_published_table(data(kVultr), sel({}, "intra-node", NcclTestsOp::broadcast)),
                       doctest::Contains("no broadcast row in scope intra-node"), InputError);
  CHECK_THROWS_WITH_AS(
      load_published_table(data(kVultr), sel("peak_busbw_GBps", "intra-node", NcclTestsOp::all_reduce)),
      doctest::Contains("series=... selects a column of a busbw-series table"), InputError);
}

TEST_CASE("published table: malformed input gives one error naming file, line and field") {
  const auto ar = sel("s_busbw_GBps", {}, NcclTestsOp::all_reduce, 1, 8);
  CHECK_THROWS_WITH_AS(
      parse_published_table("# h\nmessage_size_label,s_busbw_GBps\n1K,1.5\n2K,12,3\n", "m.csv", ar),
      doctest::Contains("m.csv:4: expected 2 comma-separated fields like the header on line 2, got 3"),
      InputError);
  CHECK_THROWS_WITH_AS(parse_published_table("message_size_label,s_busbw_GBps\n1K,1.5x\n", "m.csv", ar),
                       doctest::Contains("m.csv:2: s_busbw_GBps: expected a number, got '1.5x'"), InputError);
  CHECK_THROWS_WITH_AS(parse_published_table("message_size_label,s_busbw_GBps\n1K,\n", "m.csv", ar),
                       doctest::Contains("m.csv:2: s_busbw_GBps: expected a number, got ''"), InputError);
  CHECK_THROWS_WITH_AS(parse_published_table("message_size_label,s_busbw_GBps\n1K,-2.50\n", "m.csv", ar),
                       doctest::Contains("m.csv:2: s_busbw_GBps: expected a bus bandwidth > 0, got '-2.50'"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_published_table("message_size_label,s_busbw_GBps\n1K,0.00\n", "m.csv", ar),
                       doctest::Contains("m.csv:2: s_busbw_GBps: expected a bus bandwidth > 0, got '0.00'"),
                       InputError);
  // A bus bandwidth no link carries gives a time per call no call takes (QA: 1e300 GB/s).
  CHECK_THROWS_WITH_AS(parse_published_table("message_size_label,s_busbw_GBps\n1K,1e300\n", "m.csv", ar),
                       doctest::Contains("m.csv:2: s_busbw_GBps: '1e300' gives a time per call of"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_published_table("message_size_label,s_busbw_GBps\nlots,12.5\n", "m.csv", ar),
                       doctest::Contains("m.csv:2: message_size_label: expected a size like 65K"),
                       InputError);
  // Missing columns of the multi-op and peak-summary formats.
  CHECK_THROWS_WITH_AS(
      parse_published_table("config,nodes,gpus,metric,message_size,nccl_allreduce\n", "m.csv",
                            sel({}, "a", NcclTestsOp::all_reduce)),
      doctest::Contains("m.csv:1: header: expected a column 'gpus_per_node' (the multi-op table format)"),
      InputError);
  CHECK_THROWS_WITH_AS(
      parse_published_table("collective,ranks,scope,busbw,at_size\nall_reduce,8,intra-node,1.5,1G\n", "m.csv",
                            sel({}, "intra-node", NcclTestsOp::all_reduce)),
      doctest::Contains("m.csv:1: header: expected a column 'peak_busbw_GBps'"), InputError);
  CHECK_THROWS_WITH_AS(parse_published_table("config,nodes,gpus_per_node,metric,message_size,nccl_allreduce\n"
                                             "a,2,8,speed,1G,3.5\n",
                                             "m.csv", sel({}, "a", NcclTestsOp::all_reduce)),
                       doctest::Contains("m.csv:2: metric: expected latency_us or busbw_GBps, got 'speed'"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_published_table("config,nodes,gpus_per_node,metric,message_size,nccl_allreduce\n"
                                             "a,two,8,latency_us,1K,3.5\n",
                                             "m.csv", sel({}, "a", NcclTestsOp::all_reduce)),
                       doctest::Contains("m.csv:2: nodes: expected an integer, got 'two'"), InputError);
  CHECK_THROWS_WITH_AS(parse_published_table("# only comments\n", "m.csv", ar),
                       doctest::Contains("m.csv: not a published-table CSV"), InputError);
}

TEST_CASE("published table: load_measured_run takes a table through the run spec") {
  const auto spec = parse_run_spec(
      data(kAzure) + "@series=ndv5_h200_busbw_GBps,op=all_reduce,nodes=1,gpus_per_node=8", "--input");
  CHECK(spec.series == "ndv5_h200_busbw_GBps");
  const MeasuredRun run = load_measured_run(spec, std::string("hgx-h200"));
  CHECK(run.op == sim::CollectiveOp::allreduce);
  CHECK(run.nodes == 1);
  CHECK(run.gpus_per_node == 8);
  REQUIRE(run.bytes.size() == 20);  // 1K..8K dropped: 0.06 .. 0.47 GB/s
  CHECK(run.notes.size() == 4);
  CHECK(run.bytes.back() == 8589934592ULL);
  CHECK(run.measured_us.back() == approx(8589934592.0 * 1.75 / 479.98e3));
  // The multi-op table gives nodes and GPUs itself.
  const MeasuredRun m = load_measured_run(
      parse_run_spec(data(kMscclpp) + "@config=2node_1gpu,op=alltoall", "--input"), std::string("dgx-a100"));
  CHECK(m.nodes == 2);
  CHECK(m.gpus_per_node == 1);
  CHECK(m.op == sim::CollectiveOp::alltoall);
  // series / config on an nccl-tests log: refused, not ignored.
  CHECK_THROWS_WITH_AS(
      load_measured_run(parse_run_spec(data("nccl-tests_all_reduce_h100_1n8g_readme-single-node-test.txt") +
                                           "@series=x,nodes=1,gpus_per_node=8",
                                       "--input"),
                        std::string("dgx-h100")),
      doctest::Contains("series= and config= select a published table's points, but this file is not one"),
      InputError);
  // Inter-node summary rows need the node split.
  CHECK_THROWS_WITH_AS(
      load_measured_run(parse_run_spec(data(kVultr) + "@config=inter-node,op=all_reduce", "--input"),
                        std::string("hgx-b200")),
      doctest::Contains("node count"), InputError);
}
