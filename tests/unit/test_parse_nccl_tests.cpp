// nccl-tests output parser: the published files in calibration/data/nccl-tests and the
// robustness cases (truncation, #wrong, N/A, mixed rank lines, garbage, empty input).
#include <doctest/doctest.h>

#include "approx.hpp"

#include <fmt/format.h>
#include <filesystem>
#include <string>
#include <vector>

#include "calibration/fit/nccl_tests.hpp"
#include "calibration/fit/nccl_tests_table_op.hpp"
#include "calibration/fit/text_lines.hpp"
#include "common/error.hpp"
#include "common/input_file.hpp"

using namespace commstack::fit;

namespace {
std::string tests_dir() { return std::string(COMMSTACK_SOURCE_DIR) + "/calibration/data/nccl-tests/"; }
std::string logs_dir() { return std::string(COMMSTACK_SOURCE_DIR) + "/calibration/data/nccl-logs/"; }

const char* kSmall =
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid   6287 on     node-a device  0 [0x18] NVIDIA H200\n"
    "#  Rank  1 Group  0 Pid   6288 on     node-a device  1 [0x2a] NVIDIA H200\n"
    "#  Rank  2 Group  0 Pid   7438 on     node-b device  0 [0x18] NVIDIA H200\n"
    "#  Rank  3 Group  0 Pid   7439 on     node-b device  1 [0x2a] NVIDIA H200\n"
    "#\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
    "           8             2     float     sum      -1    29.72    0.00    0.00      0    28.67    0.00    0.00      3\n"
    "          16             4     float     sum      -1    28.45    0.00    0.00      0    27.99    0.00    0.00    N/A\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 0.0012 \n";
}  // namespace

TEST_CASE("parse: nccl-tests small table with rank lines, #wrong and N/A") {
  NcclTestsResult r = parse_nccl_tests(kSmall, "small.txt", NcclTestsOp::all_reduce);
  CHECK(r.op == NcclTestsOp::all_reduce);
  CHECK(r.op_source == "explicit");
  CHECK(r.n_ranks == 4);
  CHECK(r.n_hosts == 2);
  CHECK(r.gpus_per_node == 2);
  CHECK(r.ranks_complete);
  CHECK(r.gpu_model == "NVIDIA H200");
  CHECK(r.ranks[2].host == "node-b");
  CHECK(r.ranks[2].busid == "0x18");
  REQUIRE(r.rows.size() == 2);
  CHECK(r.rows[0].size_bytes == 8);
  CHECK(*r.rows[0].count == 2);
  CHECK(r.rows[0].type == "float");
  CHECK(*r.rows[0].root == -1);
  CHECK(r.rows[0].out_of_place->time_us == approx(29.72));
  CHECK(*r.rows[0].in_place->wrong == 3);
  CHECK_FALSE(r.rows[1].in_place->wrong.has_value());  // N/A
  CHECK(*r.rows[1].out_of_place->wrong == 0);
  CHECK(*r.avg_busbw_GBps == approx(0.0012));
  CHECK(*r.out_of_bounds == 0);
  CHECK(*r.run.iters == 20);
  CHECK(*r.run.warmup_iters == 5);
  CHECK(*r.run.agg_iters == 1);
  CHECK(*r.run.max_bytes == 16);
}

TEST_CASE("parse: nccl-tests interleaved with NCCL_DEBUG=INFO keeps the communicator's channel counts") {
  // The init line before the table is this run's; one after its first row belongs to a later run in
  // the same file (the nccl-tests#319 log has such a section) and is not taken.
  std::string text = kSmall;
  const std::string info =
      "node-a:6287:6290 [0] NCCL INFO 24 coll channels, 0 collnet channels, 16 nvls channels, 32 p2p "
      "channels, 32 "
      "p2p channels per peer\n";
  text.insert(text.find("#       size"), info);
  NcclTestsResult r = parse_nccl_tests(text, "info.txt", NcclTestsOp::all_reduce);
  REQUIRE(r.coll_channels);
  CHECK(*r.coll_channels == 24);
  CHECK(*r.nvls_channels == 16);
  CHECK(r.channels_line == 9);
  REQUIRE(r.rows.size() == 2);

  std::string later = kSmall;
  later.insert(later.find("          16 "), info);
  CHECK_FALSE(parse_nccl_tests(later, "later.txt", NcclTestsOp::all_reduce).coll_channels);
  // "0 nvls channels" (NCCL found no NVLS) is kept; a second channel line (here garbled) is not read.
  std::string zero = kSmall;
  zero.insert(zero.find("#       size"),
              "h:1:1 [0] NCCL INFO 16 coll channels, 0 collnet channels, 0 nvls channels, 16 p2p channels\n"
              "h:1:1 [0] NCCL INFO x9 coll channels\n");
  const NcclTestsResult z = parse_nccl_tests(zero, "zero.txt", NcclTestsOp::all_reduce);
  CHECK(*z.coll_channels == 16);
  REQUIRE(z.nvls_channels);
  CHECK(*z.nvls_channels == 0);
  // QA: a count NCCL cannot print in the line that is read ("0 coll channels", 999, -5, not a
  // number) was skipped and the modelled search's count used: an error naming the line and field.
  for (const char* v : {"0 coll", "65 coll", "-5 coll", "x9 coll", "16 coll channels, 99 nvls"}) {
    CAPTURE(v);
    std::string bad = kSmall;
    bad.insert(bad.find("#       size"),
               fmt::format("h:1:1 [0] NCCL INFO {} channels, 16 p2p channels\n", v));
    const std::string spec = v;
    const std::string field = spec.substr(spec.rfind(", ") == std::string::npos ? 0 : spec.rfind(", ") + 2);
    CHECK_THROWS_WITH_AS(
        parse_nccl_tests(bad, "bad.txt", NcclTestsOp::all_reduce),
        doctest::Contains(
            ("bad.txt:9: NCCL's channel line: '" + field + " channels' is not a channel count").c_str()),
        commstack::InputError);
  }
}

TEST_CASE("parse: nccl-tests -I per-iteration columns") {
  std::string text =
      "# Collective test starting: reduce_scatter_perf\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong    i_min    i_max    i_p99    i_cv%"
      "     time   algbw   busbw #wrong    i_min    i_max    i_p99    i_cv%\n"
      "     1048576        131072     float     sum      -1    20.10   52.17   45.65      0    19.80    21.30    21.10     1.50"
      "    19.90   52.69   46.10      0    19.70    20.90    20.80     1.20\n";
  NcclTestsResult r = parse_nccl_tests(text, "i.txt");
  CHECK(r.op == NcclTestsOp::reduce_scatter);
  CHECK(r.op_source == "test-start line");
  REQUIRE(r.rows.size() == 1);
  CHECK(*r.rows[0].out_of_place->i_p99_us == approx(21.10));
  CHECK(*r.rows[0].in_place->i_cv_percent == approx(1.20));
  CHECK(*r.rows[0].in_place->busbw_GBps == approx(46.10));
}

TEST_CASE("parse: every published nccl-tests file parses with its op inferred") {
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(tests_dir())) {
    if (e.path().extension() != ".txt") continue;
    ++files;
    CAPTURE(e.path().string());
    NcclTestsResult r = parse_nccl_tests_file(e.path().string());
    CHECK(r.op != NcclTestsOp::unknown);
    CHECK(!r.rows.empty());
    for (const auto& row : r.rows) CHECK(row.out_of_place.has_value());
  }
  CHECK(files == 20);
}

TEST_CASE("parse: nccl-tests published files give the right shape, version and numbers") {
  auto dgx = parse_nccl_tests_file(tests_dir() + "nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt");
  CHECK(dgx.op == NcclTestsOp::all_reduce);
  CHECK(dgx.op_source == "filename");
  CHECK(dgx.n_ranks == 8);
  CHECK(dgx.n_hosts == 1);
  CHECK(dgx.gpus_per_node == 8);
  CHECK(dgx.gpu_model == "NVIDIA H100 80GB HBM3");
  CHECK(dgx.ranks[0].busid == "0000:19:00");
  // busbw = algbw x 2(n-1)/n for all_reduce, as printed (rounding of the two columns).
  for (const auto& row : dgx.rows)
    if (*row.out_of_place->algbw_GBps > 10)
      CHECK(*row.out_of_place->busbw_GBps == approx(*row.out_of_place->algbw_GBps * 1.75).epsilon(0.002));

  auto cw = parse_nccl_tests_file(tests_dir() + "nccl-tests_all_reduce_a100_16n8g_coreweave-2022.txt");
  CHECK(cw.n_ranks == 5);  // the README shows ranks 0-4 then "..."
  CHECK(cw.elided);
  CHECK(cw.rank_lines_elided);
  CHECK_FALSE(cw.ranks_complete);  // five rank lines printed do not make a 5-rank run
  // Its table's own bus factor: 115.64 / 59.68 = 1.9377 = 2(n-1)/n for n = 32, not the 128 ranks of
  // the job the README names.
  const auto cw_ranks = ranks_from_table(cw, NcclTestsOp::all_reduce);
  REQUIRE(cw_ranks.has_value());
  CHECK(cw_ranks->ranks == 32);
  CHECK_FALSE(table_ranks_conflict(cw, NcclTestsOp::all_reduce, 32).has_value());
  const auto cw_128 = table_ranks_conflict(cw, NcclTestsOp::all_reduce, 128);
  REQUIRE(cw_128.has_value());
  CHECK(cw_128->find("1.9844 on 128 ranks and 1.9375 on 32") != std::string::npos);
  CHECK(cw.n_hosts == 1);
  CHECK(cw.gpu_model == "NVIDIA A100-SXM4-80GB");
  CHECK(cw.columns.size() == 12);  // old format: no root column, "error" instead of #wrong
  CHECK(*cw.rows[1].out_of_place->max_error == approx(2e-07));
  CHECK_FALSE(cw.rows[0].root.has_value());

  auto cs = parse_nccl_tests_file(tests_dir() + "nccl-tests_all_reduce_a100-40gb_1n8g_cs244c-modal.txt");
  CHECK(*cs.nccl_version == "2.29.3");  // nccl-library=22903
  CHECK(cs.op_source == "test-start line");
  CHECK(*cs.run.n_gpus == 8);

  auto a2a = parse_nccl_tests_file(tests_dir() + "nccl-tests_alltoall_b200_2n8g_vultr-poc.txt");
  CHECK(a2a.op == NcclTestsOp::alltoall);
  // alltoall prints the count per peer: size / (count x type size) is the rank count.
  CHECK(ranks_from_table(a2a, NcclTestsOp::alltoall)->ranks == 16);
  CHECK_FALSE(table_ranks_conflict(a2a, NcclTestsOp::alltoall, 16).has_value());
  CHECK(table_ranks_conflict(a2a, NcclTestsOp::alltoall, 128).has_value());
  // broadcast, reduce and sendrecv print busbw = algbw whatever the rank count: no evidence.
  CHECK_FALSE(ranks_from_table(dgx, NcclTestsOp::sendrecv).has_value());
  CHECK(a2a.op_source == "OP line");
  CHECK_FALSE(a2a.rows.back().in_place->wrong.has_value());
  CHECK(a2a.rows.back().size_bytes == 17179869184ULL);
  CHECK(a2a.rows.back().out_of_place->time_us == approx(379707));

  auto g = parse_nccl_tests_file(tests_dir() + "nccl-tests_all_gather_b200_1n2g_google-dranet-nvidia-dra.txt");
  CHECK(g.elided);
  CHECK(g.rows.size() == 8);

  // Whole issue logs: the op comes from the launcher command line, the version from NCCL's line.
  auto l = parse_nccl_tests_file(logs_dir() + "nccl-tests-319-hgx-h100-2node-ib-nccl2.26.2.log");
  CHECK(l.op == NcclTestsOp::all_reduce);
  CHECK(l.op_source == "command line");
  CHECK(*l.nccl_version == "2.26.2");
  CHECK(l.rows.size() == 32);
  CHECK(*l.avg_busbw_GBps == approx(33.4128));
  auto h = parse_nccl_tests_file(logs_dir() + "nccl-tests-256-h200-topo-dump.txt");
  CHECK(h.n_ranks == 16);
  CHECK(h.n_hosts == 2);
  CHECK(h.gpus_per_node == 8);
  CHECK(h.rows.size() == 3);
  CHECK(h.rows[2].in_place->busbw_GBps == approx(486.84));
}

TEST_CASE("parse: nccl-tests bad input is an InputError naming file and line") {
  CHECK_THROWS_WITH_AS(parse_nccl_tests("", "e.txt"), doctest::Contains("e.txt: empty"), commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_tests("hello\nworld\n", "g.txt"), doctest::Contains("no nccl-tests column header"),
                       commstack::InputError);
  std::string s(kSmall);
  std::string header_only = s.substr(0, s.find("           8"));
  CHECK_THROWS_WITH_AS(parse_nccl_tests(header_only, "h.txt"), doctest::Contains("no data rows"), commstack::InputError);
  // A row cut short with rows after it is no cut log: an error naming the line.
  std::string cut_inside = s;
  cut_inside.replace(cut_inside.find("    28.67    0.00    0.00      3"), 32, "");
  CHECK_THROWS_WITH_AS(parse_nccl_tests(cut_inside, "t.txt"),
                       doctest::Contains("t.txt:11: expected a result row with 13"), commstack::InputError);
  // The only row cut short: nothing to use.
  std::string only_row_cut = s.substr(0, s.find("28.67"));
  CHECK_THROWS_WITH_AS(parse_nccl_tests(only_row_cut, "t.txt"),
                       doctest::Contains("t.txt:11: the result table's only row is cut short"),
                       commstack::InputError);
  std::string bad_num = s;
  bad_num.replace(bad_num.find("29.72"), 5, "29.x2");
  CHECK_THROWS_WITH_AS(parse_nccl_tests(bad_num, "n.txt"), doctest::Contains("n.txt:11: column 'time'"), commstack::InputError);
  std::string dup = s;
  dup.replace(dup.find("Rank  1"), 7, "Rank  0");
  CHECK_THROWS_WITH_AS(parse_nccl_tests(dup, "d.txt"), doctest::Contains("d.txt:5: rank line: rank 0 listed twice"),
                       commstack::InputError);
  std::string mixed = s;
  mixed.insert(mixed.find("          16"), "#  Rank  9 Group  0 Pid 1 on x device 0 [0x1] GPU\n");
  CHECK_THROWS_WITH_AS(parse_nccl_tests(mixed, "m.txt"), doctest::Contains("rank line inside the result table"),
                       commstack::InputError);
  std::string bad_rank = s;
  bad_rank.replace(bad_rank.find("Pid   6287"), 10, "Pod   6287");
  CHECK_THROWS_AS(parse_nccl_tests(bad_rank, "r.txt"), commstack::InputError);
  std::string wrong = s;
  wrong.replace(wrong.find("     3\n"), 7, "   1.5\n");
  CHECK_THROWS_WITH_AS(parse_nccl_tests(wrong, "w.txt"), doctest::Contains("whole count or N/A"), commstack::InputError);
  CHECK_THROWS_AS(parse_nccl_tests_file("/nonexistent/file.txt"), commstack::InputError);
}

// QA: a row of size > 0 timed at 0 was dropped unseen, and one at 1e-300 or 1e300 us was taken
// as measured (an error of 1e304 %). Either is refused, naming the line and the time column; a
// 0-byte row (nothing to move) keeps whatever time it prints.
TEST_CASE("parse: nccl-tests time of 0 or not physical in a row of size > 0 names the line and column") {
  const std::string s(kSmall);
  for (const char* t : {" 0.00", "0.000", "1e-300", " 1e300", "2e12 "}) {
    CAPTURE(t);
    std::string bad = s;
    bad.replace(bad.find("28.67"), 5, t);
    CHECK_THROWS_WITH_AS(
        parse_nccl_tests(bad, "t.txt"),
        doctest::Contains(
            "t.txt:11: column 'time' (in-place): expected a time per call of 0.001 us to 1e+12 us"),
        commstack::InputError);
  }
  std::string bad = s;
  bad.replace(bad.find("28.45"), 5, " 0.00");
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests(bad, "t.txt"),
      doctest::Contains("t.txt:12: column 'time' (out-of-place): expected a time per call of "
                        "0.001 us to 1e+12 us (the row has a size > 0), got 0"),
      commstack::InputError);
  std::string zero_bytes = s;
  zero_bytes.replace(zero_bytes.find("           8             2"), 26, "           0             0");
  zero_bytes.replace(zero_bytes.find("29.72"), 5, " 0.00");
  const NcclTestsResult r = parse_nccl_tests(zero_bytes, "z.txt", NcclTestsOp::all_reduce);
  REQUIRE(r.rows.size() == 2);
  CHECK(r.rows[0].size_bytes == 0);
  CHECK(r.rows[0].out_of_place->time_us == 0);
}

namespace {
// kSmall with each line prefixed the way a launcher or log collector captures it: line n gets
// prefixes[n % prefixes.size()].
std::string with_prefix(const std::vector<std::string>& prefixes, const char* text) {
  std::string out, line;
  std::size_t n = 0;
  for (const char* c = text; *c != 0; ++c) {
    line += *c;
    if (*c == '\n') {
      out += prefixes[n++ % prefixes.size()] + line;
      line.clear();
    }
  }
  return out + line;
}
}  // namespace

TEST_CASE(
    "parse: nccl-tests output captured through mpirun --tag-output, srun --label, -prepend-rank, kubectl") {
  const NcclTestsResult plain = parse_nccl_tests(kSmall, "small.txt", NcclTestsOp::all_reduce);
  const std::vector<std::vector<std::string>> launchers = {
      {"[1,0]<stdout>:"},   // Open MPI --tag-output
      {"[1,0]<stdout>: "},  // Open MPI 5 --output tag
      {" 0: "},             // srun --label
      {"[0] "},             // MPICH -prepend-rank, Intel MPI -l
      {"2025-01-31T12:00:00.123456789Z ", "2025-01-31T12:00:01+01:00 "}};  // kubectl logs --timestamps
  for (const auto& prefixes : launchers) {
    const std::string text = with_prefix(prefixes, kSmall);
    const NcclTestsResult r = parse_nccl_tests(text, "prefixed.txt", NcclTestsOp::all_reduce);
    CAPTURE(text.substr(0, 40));
    CHECK(r.n_ranks == plain.n_ranks);
    CHECK(r.n_hosts == plain.n_hosts);
    CHECK(r.ranks[2].host == "node-b");
    REQUIRE(r.rows.size() == plain.rows.size());
    CHECK(r.rows[1].size_bytes == 16);
    CHECK(r.rows[0].out_of_place->time_us == approx(29.72));
    CHECK(*r.rows[0].in_place->wrong == 3);
    CHECK(*r.avg_busbw_GBps == approx(0.0012));
    CHECK(*r.run.iters == 20);
  }
}

TEST_CASE("parse: a launcher prefix is removed only in its exact shape") {
  using commstack::fit::detail::strip_launcher_prefix;
  CHECK(strip_launcher_prefix("[1,12]<stderr>:x") == "x");
  CHECK(strip_launcher_prefix("12: #  Rank") == "#  Rank");
  CHECK(strip_launcher_prefix("[7] host:1:1 [7] NCCL INFO") == "host:1:1 [7] NCCL INFO");
  CHECK(strip_launcher_prefix("2025-01-31T12:00:00Z [1,0]<stdout>:#  Rank") == "#  Rank");
  // Indented (a log pasted into an issue): the indentation goes with the bracketed prefix.
  CHECK(strip_launcher_prefix("        [1,0]<stdout>:#  size") == "#  size");
  CHECK(strip_launcher_prefix("\t[3] #  Rank") == "#  Rank");
  // Not prefixes: a data row, a host:pid:tid NCCL line, a bracket without a space, a bad time.
  CHECK(strip_launcher_prefix("           8             2     float") ==
        "           8             2     float");
  CHECK(strip_launcher_prefix("node12:4567:4567 [0] NCCL INFO") == "node12:4567:4567 [0] NCCL INFO");
  CHECK(strip_launcher_prefix("12:34 x") == "12:34 x");
  CHECK(strip_launcher_prefix("[0]x") == "[0]x");
  CHECK(strip_launcher_prefix("[1,0]<stdin>:x") == "[1,0]<stdin>:x");
  CHECK(strip_launcher_prefix("2025-01-31 12:00:00 x") == "2025-01-31 12:00:00 x");
  CHECK(strip_launcher_prefix("") == "");
}

TEST_CASE(
    "parse: NCCL settings shown before the table (NCCL INFO 'set by environment', launcher VAR=value)") {
  const std::string text =
      std::string(
          "mpirun -np 4 -x NCCL_PROTO=Simple --export=ALL,NCCL_MIN_CTAS=4 -x LD_NCCL_X=1 ./all_reduce_perf "
          "-b 8\n") +
      "node-a:11:11 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n"
      "node-a:11:11 [0] NCCL INFO NCCL_CROSS_NIC set by environment to 2.\n"
      "node-a:12:12 [1] NCCL INFO NCCL_ALGO set by environment to Tree\n" +  // first mention kept
      kSmall +
      "node-a:11:11 [0] NCCL INFO NCCL_PROTO set by environment to LL\n";  // after the table: not this run
  const NcclTestsResult r = parse_nccl_tests(text, "env.txt", NcclTestsOp::unknown);
  CHECK(r.op == NcclTestsOp::all_reduce);  // from the launcher line
  REQUIRE(r.env.size() == 4);
  CHECK(r.env.at("NCCL_PROTO").value == "Simple");
  CHECK(r.env.at("NCCL_PROTO").line == 1);
  CHECK(r.env.at("NCCL_MIN_CTAS").value == "4");
  CHECK(r.env.at("NCCL_ALGO").value == "Ring");
  CHECK(r.env.at("NCCL_ALGO").line == 2);
  CHECK(r.env.at("NCCL_CROSS_NIC").value == "2");
  CHECK(r.env.count("LD_NCCL_X") == 0);
  // Comment lines (a collector's own notes) are not launcher output.
  const NcclTestsResult c =
      parse_nccl_tests(std::string("# Env: NCCL_ALGO=Tree\n") + kSmall, "c.txt", NcclTestsOp::all_reduce);
  CHECK(c.env.empty());
}

TEST_CASE(
    "parse: a log pasted into Markdown without a code block (header lines lost their '#') parses the same") {
  const std::string path = tests_dir() + "nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt";
  const std::string text = commstack::read_input_file(path);
  std::string stripped;
  for (std::size_t i = 0; i < text.size(); ++i)
    if (!(text[i] == '#' && (i == 0 || text[i - 1] == '\n'))) stripped += text[i];
  const NcclTestsResult a = parse_nccl_tests(text, "plain.txt", NcclTestsOp::all_reduce);
  const NcclTestsResult b = parse_nccl_tests(stripped, "pasted.txt", NcclTestsOp::all_reduce);
  CHECK(b.n_ranks == a.n_ranks);
  CHECK(b.n_hosts == a.n_hosts);
  CHECK(b.gpu_model == a.gpu_model);
  CHECK(b.run.n_gpus == a.run.n_gpus);
  CHECK(b.columns == a.columns);
  REQUIRE(b.rows.size() == a.rows.size());
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    CHECK(b.rows[i].size_bytes == a.rows[i].size_bytes);
    CHECK(b.rows[i].out_of_place->time_us == a.rows[i].out_of_place->time_us);
  }
  CHECK(b.avg_busbw_GBps == a.avg_busbw_GBps);
}

TEST_CASE("parse: the table's own columns give the op of every published run they can tell") {
  // Each shared log names its op (file name, test-start, OP or command line); the columns alone must
  // agree with it, or give up where two ops print the same columns (all_gather / alltoall).
  int told = 0;
  for (const auto& e : std::filesystem::directory_iterator(tests_dir())) {
    if (e.path().extension() != ".txt") continue;
    CAPTURE(e.path().string());
    const NcclTestsResult r = parse_nccl_tests_file(e.path().string());
    const TableOpInference t = op_from_table(r);
    CAPTURE(t.reason);
    if (r.op == NcclTestsOp::all_gather || r.op == NcclTestsOp::alltoall) {
      CHECK(t.op == NcclTestsOp::unknown);
      CHECK(t.reason.find("all_gather or alltoall") != std::string::npos);
    } else if (r.op == NcclTestsOp::sendrecv && r.n_ranks == 0) {
      // No rank lines (the li-plus excerpt): busbw = algbw is also a 2-rank all_reduce.
      CHECK(t.op == NcclTestsOp::unknown);
      CHECK(t.reason.find("2 ranks") != std::string::npos);
    } else {
      CHECK(t.op == r.op);
      ++told;
    }
  }
  CHECK(told == 14);  // 12 all_reduce, 2 reduce_scatter
}

TEST_CASE("parse: with no op named anywhere, the columns decide and say why") {
  // Old nccl-tests print no test-start line; a pasted log has no file name to go by. Four ranks.
  std::string head =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 "
      "validation: 1\n";
  for (int r = 0; r < 4; ++r)
    head += fmt::format("#  Rank {} Group 0 Pid {} on a device {} [0x{}] NVIDIA H100 80GB HBM3\n", r, r + 1,
                        r, r);
  head += "# size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n";
  // One 128 MiB row at algbw 134.22 GB/s: count, redop, root and busbw are what the cases vary.
  const auto parse = [&](std::uint64_t count, const char* redop, int root, double busbw) {
    const std::string row =
        fmt::format("134217728 {} float {} {} 1000.0 134.22 {:.2f} 0 1000.0 134.22 {:.2f} 0\n", count, redop,
                    root, busbw, busbw);
    return parse_nccl_tests(head + row, "pasted.txt");
  };
  struct Case {
    const char* what;
    std::uint64_t count;
    const char* redop;
    int root;
    NcclTestsOp op;
    double busbw;
  };
  const Case cases[] = {
      {"all_reduce: count = size / 4 B, busbw = 1.5 x algbw", 33554432, "sum", -1, NcclTestsOp::all_reduce,
       201.33},
      {"sendrecv: busbw = algbw on 4 ranks (not a 2-rank all_reduce)", 33554432, "sum", -1,
       NcclTestsOp::sendrecv, 134.22},
      {"reduce_scatter: count = size / (4 x 4 B)", 8388608, "sum", -1, NcclTestsOp::reduce_scatter, 100.66},
      {"broadcast: a root, no reduction", 33554432, "none", 0, NcclTestsOp::broadcast, 134.22},
      {"reduce: a root and a reduction", 33554432, "sum", 0, NcclTestsOp::reduce, 134.22},
      {"all_gather or alltoall: the same columns", 8388608, "none", -1, NcclTestsOp::unknown, 100.66},
      {"a bus factor no op gives on 4 ranks", 33554432, "sum", -1, NcclTestsOp::unknown, 180.0},
      {"a count that is neither 1 nor 4 ranks per size", 16777216, "sum", -1, NcclTestsOp::unknown, 134.22},
      // 2^62 floats: count x 4 B wraps to 0 in 64 bits (was a division by zero, found by the fuzzer).
      {"a count larger than the size allows", std::uint64_t{1} << 62, "sum", -1, NcclTestsOp::unknown,
       201.33},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    const NcclTestsResult r = parse(c.count, c.redop, c.root, c.busbw);
    CHECK(r.op == c.op);
    CHECK(r.op_source == (c.op == NcclTestsOp::unknown ? "unknown" : "table columns"));
    CHECK_FALSE(r.op_table_reason.empty());
  }
  CHECK(parse(8388608, "none", -1, 100.66).op_table_reason.find("all_gather or alltoall") !=
        std::string::npos);
  CHECK(parse(std::uint64_t{1} << 62, "sum", -1, 201.33).op_table_reason ==
        "count 4611686018427387904 x type size 4 exceeds the size 134217728");
  // busbw 0.00 (small sizes only): all_reduce and sendrecv cannot be told apart.
  CHECK(parse_nccl_tests(head + "8 2 float sum -1 29.72 0.00 0.00 0 28.67 0.00 0.00 0\n", "pasted.txt").op ==
        NcclTestsOp::unknown);
  // An explicit op wins over the columns.
  const NcclTestsResult forced = parse_nccl_tests(
      head + "134217728 33554432 float sum -1 1000.0 134.22 201.33 0 1000.0 134.22 201.33 0\n", "pasted.txt",
      NcclTestsOp::sendrecv);
  CHECK(forced.op == NcclTestsOp::sendrecv);
  CHECK(forced.op_source == "explicit");
  // ... and what the output says is kept, for the caller to catch the contradiction.
  CHECK(forced.table_op == NcclTestsOp::all_reduce);
  CHECK(forced.logged_op == NcclTestsOp::all_reduce);
  CHECK(forced.logged_op_source == "table columns");
}

TEST_CASE("parse: a log of several nccl-tests runs is read one run at a time") {
  // A job that ran all_reduce_perf, then all_gather_perf, into one output file.
  const std::string table = "# size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n";
  const std::string ar = "# Collective test starting: all_reduce_perf\n" + table +
                         "1048576 262144 float sum -1 30.0 34.95 61.17 0 30.0 34.95 61.17 0\n"
                         "2097152 524288 float sum -1 40.0 52.43 91.75 0 40.0 52.43 91.75 0\n"
                         "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 76.46\n";
  const std::string ag = "# Collective test starting: all_gather_perf\n" + table +
                         "1048576 32768 float none -1 20.0 52.43 45.88 0 20.0 52.43 45.88 0\n"
                         "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 45.88\n";
  const std::string chatter = "node-a:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 8 - Destroy COMPLETE\n";
  const std::string two = ar + ag + chatter;
  CHECK(count_nccl_tests_runs(two) == 2);
  const NcclTestsResult first = parse_nccl_tests(two, "job.out", NcclTestsOp::unknown, 0);
  CHECK(first.op == NcclTestsOp::all_reduce);
  CHECK(first.rows.size() == 2);
  CHECK(*first.avg_busbw_GBps == approx(76.46));
  const NcclTestsResult second = parse_nccl_tests(two, "job.out", NcclTestsOp::unknown, 1);
  CHECK(second.op == NcclTestsOp::all_gather);
  REQUIRE(second.rows.size() == 1);
  CHECK(second.rows[0].count == 32768U);
  CHECK(second.table_first_line == 8);  // line numbers stay those of the whole file
  CHECK_THROWS_AS(parse_nccl_tests(two, "job.out", NcclTestsOp::unknown, 2), commstack::InputError);
  // One run, with chatter after its footer: one run.
  CHECK(count_nccl_tests_runs(ar + chatter) == 1);
  // A table whose footer was lost ends where the next table starts.
  CHECK(count_nccl_tests_runs(table + "1048576 262144 float sum -1 30.0 34.95 61.17 0 30.0 34.95 61.17 0\n" +
                              ag) == 2);
  // The nccl-tests#319 log: its second run's table lost its column header in the post, so it is no
  // run the parser can read (the first one is).
  CHECK(count_nccl_tests_runs(
            commstack::read_input_file(logs_dir() + "nccl-tests-319-hgx-h100-2node-ib-nccl2.26.2.log")) == 1);
}

TEST_CASE("parse: op names from binaries and file names, alltoallv kept apart from alltoall") {
  CHECK(nccl_tests_op_from_name("all_reduce_perf") == NcclTestsOp::all_reduce);
  CHECK(nccl_tests_op_from_name("reduce_scatter_perf_mpi") == NcclTestsOp::reduce_scatter);
  CHECK(nccl_tests_op_from_name("AllReduce") == NcclTestsOp::all_reduce);
  // nccl-tests 2.18+ alltoallv sends distance-weighted uneven counts: not an alltoall.
  CHECK(nccl_tests_op_from_name("alltoallv_perf") == NcclTestsOp::alltoallv);
  CHECK(nccl_tests_op_in_text("run-alltoallv-2n8g.log") == NcclTestsOp::alltoallv);
  CHECK(nccl_tests_op_in_text("run-alltoall-2n8g.log") == NcclTestsOp::alltoall);
  CHECK(nccl_tests_op_in_text("nccl-tests_reduce_scatter_b200.txt") == NcclTestsOp::reduce_scatter);
  CHECK_FALSE(collective_op_of(NcclTestsOp::alltoallv).has_value());
  CHECK(to_string(NcclTestsOp::alltoallv) == "alltoallv");
}

TEST_CASE("parse: logs as users paste them: a cut last row, other output in the table, tabs, old columns") {
  const std::string s(kSmall);
  // The last row cut short (a pasted excerpt, an interrupted run): the complete rows are used and
  // a note says which line was left out; its fields but the last must still read as their columns.
  const std::string cut = s.substr(0, s.find("0.00    0.00    N/A"));
  const NcclTestsResult r = parse_nccl_tests(cut, "cut.txt", NcclTestsOp::all_reduce);
  REQUIRE(r.rows.size() == 1);
  CHECK(r.rows[0].size_bytes == 8);
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0] ==
        "cut.txt:12: the table's last row has 10 of its 13 fields (the log is cut short?): not used");
  std::string cut_bad = cut;
  cut_bad.replace(cut_bad.find("float     sum      -1    28.45"), 30, "float     sum      xx    28.45");
  CHECK_THROWS_WITH_AS(parse_nccl_tests(cut_bad, "cb.txt"), doctest::Contains("cb.txt:12: column 'root'"),
                       commstack::InputError);

  // Someone else's output inside the table (a driver message, a user's note): skipped, counted.
  std::string chatter = s;
  chatter.insert(chatter.find("          16"),
                 "mlx5: node-b: got completion with error:\nok, second size:\n");
  const NcclTestsResult c = parse_nccl_tests(chatter, "c.txt", NcclTestsOp::all_reduce);
  CHECK(c.rows.size() == 2);
  REQUIRE(c.notes.size() == 1);
  CHECK(c.notes[0] ==
        "c.txt: 2 line(s) inside the result table are not result rows and were skipped (the first, line 12: "
        "'mlx5: node-b: got completion with error:')");
  // A run that stopped after its header: the message shows what came instead of rows.
  std::string aborted = s.substr(0, s.find("           8"));
  aborted += "node-b:7438:7438 [0] NCCL INFO Launch mode Parallel\nSegmentation fault (core dumped)\n";
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests(aborted, "a.txt"),
      doctest::Contains("a.txt: the result table (header at line 9) has no data rows; the first "
                        "line after it is line 12: 'Segmentation fault (core dumped)'"),
      commstack::InputError);

  // Two ranks on one GPU (same host, device and bus id): noted.
  std::string shared = s;
  shared.replace(shared.find("device  1 [0x2a]"), 16, "device  0 [0x18]");
  const NcclTestsResult g = parse_nccl_tests(shared, "g.txt", NcclTestsOp::all_reduce);
  REQUIRE(g.notes.size() == 1);
  CHECK(g.notes[0] ==
        "g.txt: ranks 0 and 1 both name host node-a device 0 [0x18]: they shared one GPU, where the "
        "prediction gives each rank its own");

  // Tabs instead of spaces, rank lines included (logs through spreadsheets and editors).
  std::string tabs = s;
  for (auto& ch : tabs)
    if (ch == ' ') ch = '\t';
  const NcclTestsResult t = parse_nccl_tests(tabs, "tabs.txt", NcclTestsOp::all_reduce);
  CHECK(t.n_ranks == 4);
  CHECK(t.n_hosts == 2);
  CHECK(t.gpus_per_node == 2);
  CHECK(t.rows.size() == 2);
  CHECK(*t.run.iters == 20);

  // nccl-tests before 2.13: an "error" column, N/A there under -c 0 (as #wrong later); alltoall rows
  // with no redop word at all.
  const std::string old =
      "#                                                     out-of-place                    in-place\n"
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  "
      "error\n"
      "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "     1048576         32768   float            212.1    4.94    4.64    N/A    212.8    4.93    4.62   "
      " N/A\n"
      "     2097152         65536   float            380.5    5.51    5.17  0e+00    381.0    5.50    5.16  "
      "0e+00\n";
  const NcclTestsResult o = parse_nccl_tests(old, "alltoall_old.txt");
  REQUIRE(o.rows.size() == 2);
  CHECK(o.rows[0].redop.empty());
  CHECK(o.rows[0].out_of_place->time_us == approx(212.1));
  CHECK_FALSE(o.rows[0].out_of_place->max_error.has_value());
  CHECK(*o.rows[1].in_place->max_error == 0.0);
  CHECK(o.op == NcclTestsOp::alltoall);  // from the file name: a blank redop tells the columns nothing
  CHECK(o.table_ops.empty());

  // A header the tool cannot read says why: two tables side by side, a line cut mid-word, rows
  // without their header.
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests("#  size count type redop root time algbw busbw #wrong  |  #  size count type\n",
                       "sb.txt"),
      doctest::Contains("sb.txt:1: column header: a '|' between columns: two tables side by side"),
      commstack::InputError);
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests("#  size  count  type  redop  root  time  algbw  bu\n", "h.txt"),
      doctest::Contains("h.txt:1: column header: it ends in 'bu', the start of 'busbw': the line is "
                        "cut short"),
      commstack::InputError);
  // Rows without their header: nccl-tests 2.x's standard 13 columns are read as those, with a note;
  // rows of any other shape (the old layout without root, -I's extra columns) still need the header.
  const std::string rows_only = s.substr(s.find("           8"));
  const auto full = parse_nccl_tests(s, "s.txt");
  const auto headerless = parse_nccl_tests(rows_only, "r.txt");
  REQUIRE(headerless.rows.size() == 2);
  CHECK(headerless.rows[0].size_bytes == 8);
  CHECK(headerless.rows[1].out_of_place->time_us == approx(full.rows[1].out_of_place->time_us));
  CHECK(headerless.rows[1].in_place->busbw_GBps == full.rows[1].in_place->busbw_GBps);
  CHECK(headerless.table_first_line == 1);
  REQUIRE(!headerless.notes.empty());
  CHECK(
      headerless.notes[0].find("r.txt: no column header: the rows (from line 1) have nccl-tests' standard 13 "
                               "columns") != std::string::npos);
  const std::string old_layout =
      "           8             2     float     sum    12.11    0.00    0.00  0e+00    11.93    0.00    0.00 "
      " 0e+00\n"
      "          16             4     float     sum    12.40    0.00    0.00  0e+00    12.02    0.00    0.00 "
      " 0e+00\n";
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests(old_layout, "r.txt"),
      doctest::Contains("no nccl-tests column header ('#  size  count  type ... time  algbw  busbw') "
                        "found, though 2 line(s) look like result rows (the first at line 1)"),
      commstack::InputError);
  // -I's four extra columns per half (min, max, p99, cv): 21 fields, not read without the header.
  const std::string extra_columns =
      "           8             2     float     sum      -1    12.11    0.00    0.00      0   11.2   13.0   "
      "13.0   "
      "2.1    11.93    0.00    0.00      0   11.1   12.9   12.9   2.0\n";
  CHECK_THROWS_WITH_AS(parse_nccl_tests(extra_columns, "x.txt"),
                       doctest::Contains("no nccl-tests column header"), commstack::InputError);
}

TEST_CASE("parse: a file name's op that the table's columns rule out is not used") {
  // One row on 2 ranks, count = size / (ranks x type size): all_gather or alltoall with redop none,
  // reduce_scatter with a reduction.
  const auto table = [](const std::string& redop) {
    return "#  Rank  0 Group  0 Pid   6287 on     node-a device  0 [0x18] NVIDIA H100 80GB HBM3\n"
           "#  Rank  1 Group  0 Pid   6287 on     node-a device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
           "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
           "algbw "
           "  busbw #wrong\n"
           "     1048576        131072     float  " +
           redop + "      -1    20.51   51.12   25.56      0    18.02   58.19   29.09      0\n";
  };
  const std::string ag = table("none");
  const NcclTestsResult a = parse_nccl_tests(ag, "all_reduce_perf.txt");
  CHECK(a.op == NcclTestsOp::unknown);
  CHECK(a.op_table_reason.find("the file name's all_reduce is ruled out by them") != std::string::npos);
  CHECK(a.table_ops.size() >= 2);
  // Columns that decide win over the file name, with a note.
  const std::string rs = table(" sum");
  const NcclTestsResult r = parse_nccl_tests(rs, "all_gather_perf.txt");
  CHECK(r.op == NcclTestsOp::reduce_scatter);
  CHECK(r.op_source == "table columns");
  REQUIRE(r.notes.size() == 1);
  CHECK(
      r.notes[0].find("the file name says all_gather, but the result table's columns give reduce_scatter") !=
      std::string::npos);
  // A file name the columns allow is used as before.
  CHECK(parse_nccl_tests(ag, "all_gather_perf.txt").op == NcclTestsOp::all_gather);
  CHECK(parse_nccl_tests(ag, "all_gather_perf.txt").notes.empty());
}
