// Deterministic mutation fuzzer for the measurement parsers in calibration/fit and the readers of
// the other files users write: clusters (topologies), what-if scenarios (sim/scenario) and sweeps
// (sim/sweep).
//   commstack_fuzz_parsers <target> <iterations> <max_seconds> [generator seed, default 0xC0FFEE]
// target: nccl_tests | nccl_tests_json | osu | repro_mpi | nccl_log | topo_xml | published_table |
// bench_json | cluster_json | scenario_json | sweep_json. Seeds are the project's copies of published files
// (calibration/data) plus built-in samples for formats without a published file. Each iteration mutates one
// seed (byte flips, truncation, insertion of bytes or of tokens the formats care about, line
// duplication/deletion) with a fixed-seed generator, then requires that the parser either returns or throws
// commstack::InputError. Any other exception fails the run; crashes and memory errors fail it too (ASan in
// the sanitizer build).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/bench/report.hpp"
#include "calibration/fit/bench_json.hpp"
#include "calibration/fit/nccl_log.hpp"
#include "calibration/fit/nccl_tests.hpp"
#include "calibration/fit/nccl_tests_json.hpp"
#include "calibration/fit/nccl_topo_xml.hpp"
#include "calibration/fit/node_from_topo_xml.hpp"
#include "calibration/fit/osu.hpp"
#include "calibration/fit/osu_run.hpp"
#include "calibration/fit/published_table.hpp"
#include "calibration/fit/repro_mpi.hpp"
#include "calibration/fit/text_lines.hpp"
#include "common/error.hpp"
#include "common/input_file.hpp"
#include "json_mutation.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/stack/embedded_profiles.hpp"
#include "sim/stack/predict.hpp"
#include "sim/stack/profile.hpp"
#include "sim/sweep/spec.hpp"
#include "sim/sweep/training_jobs.hpp"
#include "topologies/cluster.hpp"

namespace fs = std::filesystem;
using namespace commstack::fit;

namespace {

std::vector<std::string> files_in(const std::string& dir, const std::vector<std::string>& name_parts) {
  std::vector<std::string> paths;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    for (const auto& part : name_parts)
      if (name.find(part) != std::string::npos) {
        paths.push_back(e.path().string());
        break;
      }
  }
  std::sort(paths.begin(), paths.end());  // directory order is not deterministic
  std::vector<std::string> texts;
  texts.reserve(paths.size());
  for (const auto& p : paths) texts.push_back(commstack::read_input_file(p));
  return texts;
}

const char* kOsuSeeds[] = {
    "# OSU MPI-CUDA Latency Test v7.3\n# Send Buffer on DEVICE (D) and Receive Buffer on HOST (H)\n# Size    "
    "      Latency (us)\n"
    "0                       1.90\n1                       2.12\n1024                    3.40\n4194304       "
    "        221.45\n",
    "# OSU MPI Allreduce Latency Test v7.3\n# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us) "
    " Iterations\n"
    "4                       1.85              1.60              2.10        1000\n8                       "
    "1.87              1.61"
    "              2.13        1000\n",
    "# OSU MPI Bi-Directional Bandwidth Test v5.8\n# Size      Bandwidth (MB/s)\n1                       "
    "3.41\n1048576             24100.55\n",
    "#Using NCCL\n\n# OSU NCCL-CUDA All-to-All Personalized Exchange Latency Test v7.5\n# Size       Avg "
    "Latency(us)\n"
    "1024                   40.10\n1048576               95.20\n"};

const char* kReproSeeds[] = {
    "#Command-line arguments:  ./bin/mpibenchmark --msizes-list=1,10 --calls-list=MPI_Allreduce --nrep=3\n#MPI calls:\n"
    "#    MPI_Allreduce\n#@operation=MPI_BOR\n#@datatype=MPI_BYTE\n#@datatype_size_bytes=1\n#@nprocs=4\n#@nrep=3\n"
    "                 test       nrep        count    runtime_sec\n        MPI_Allreduce          0            1   0.0000109819\n"
    "        MPI_Allreduce          1            1   0.0000030911\n        MPI_Allreduce          0           10   0.0000040000\n"};

const char* kTokens[] = {"N/A", "-1", "1e309", "nan", "inf", "#", "\n", "|", "/", "<", ">", "...", "  ", "\t", "0x", "Rank",
                         "# Avg bus bandwidth : ", "NCCL INFO ", " Bytes -> Algo ", "<pci busid=\"x\">", "</cpu>", "\"", "=",
                         "99999999999999999999", "-", ":", "[", "]", "{", "}", "..", "\r\n", "&amp;", "<!--", "\xff\xfe",
                         ",", " GiB", "K", "0.00"};

// A commstack-bench report with one of every series kind (the bench needs a GPU, so no published
// report exists): the fuzzer mutates its JSON text.
std::string bench_seed() {
  using namespace commstack::bench;
  BenchReport r;
  r.machine = {"NVIDIA H100 80GB HBM3", 90,    "13.0", "13.0", "2.28.9",          2, 2, 4,
               {"a", "a", "b", "b"},    "mpi", "",     "",     {"NCCL_ALGO=Ring"}};
  r.settings = {"standard", 5, 20, 5, "float", ""};
  const Summary t = summarize(std::vector<double>{19.8, 20.0, 21.0});
  CollectiveSeries ar;
  ar.points = {{1024, 256, t, 0.05, 0.08}, {1u << 20, 1u << 18, t, 52.4, 78.6}};
  CollectiveSeries ag = ar;
  ag.op = Op::all_gather;
  ag.algo = Algo::ring;
  ag.proto = Proto::ll128;
  ag.ctas = 8;
  CollectiveSeries refused;
  refused.algo = Algo::nvls_tree;
  refused.status = "ncclInvalidUsage";
  refused.points.clear();
  r.collectives = {ar, ag, refused};
  r.p2p = {{"nccl_rail", 0, 2, "a", "b", 0, 0, {{1u << 20, t, 48.0}}}};
  r.kernels = {{"copy", 0, 1u << 30, t, 2900.0}, {"launch", 0, 0, t, 0}};
  r.gemm = {{"bf16", 8192, 8192, 8192, "ok", t, 650.0}};
  r.skipped = {"alltoall/nvls: not supported"};
  return dump_report(r);
}

// A mutated document the way the file loaders take it: parsed, or refused as an InputError.
template <class Json>
Json json_or_refuse(const std::string& text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw commstack::InputError("fuzz: not valid JSON");
  return j;
}

std::string mutate(const std::string& seed, std::mt19937_64& rng) {
  std::string s = seed;
  std::uniform_int_distribution<int> n_ops(1, 8);
  int ops = n_ops(rng);
  for (int k = 0; k < ops; ++k) {
    int kind = static_cast<int>(rng() % 7);
    std::size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (kind) {
      case 0:  // flip a byte
        if (!s.empty()) s[pos % s.size()] = static_cast<char>(s[pos % s.size()] ^ static_cast<char>(1u << (rng() % 8)));
        break;
      case 1:  // truncate
        s.resize(pos);
        break;
      case 2:  // insert a random byte
        s.insert(pos, 1, static_cast<char>(rng() % 256));
        break;
      case 3:  // insert a token
        s.insert(pos, kTokens[rng() % (sizeof(kTokens) / sizeof(kTokens[0]))]);
        break;
      case 4: {  // delete a span
        std::size_t len = rng() % 64;
        if (pos < s.size()) s.erase(pos, len);
        break;
      }
      case 5: {  // duplicate a line
        std::size_t a = s.rfind('\n', pos == 0 ? 0 : pos - 1);
        a = a == std::string::npos ? 0 : a + 1;
        std::size_t b = s.find('\n', pos);
        if (b != std::string::npos && b > a) s.insert(b + 1, s.substr(a, b - a + 1));
        break;
      }
      default: {  // replace a digit by another character
        for (std::size_t i = pos; i < s.size(); ++i)
          if (s[i] >= '0' && s[i] <= '9') {
            const char repl[] = "x.-e+ 9";
            s[i] = repl[rng() % 7];
            break;
          }
      }
    }
  }
  return s;
}

// One fuzz target: its seeds and what one input goes through.
struct Target {
  std::vector<std::string> seeds;
  std::function<void(const std::string&)> parse;
  bool json_values = false;  // the seeds are JSON: half the mutations change values, not bytes
};

std::string source_dir(const char* sub) {
  return std::string(COMMSTACK_SOURCE_DIR) + sub;
}

Target nccl_tests_target(const std::string& data) {
  Target t;
  t.seeds = files_in(data + "nccl-tests", {".txt"});
  auto more = files_in(data + "nccl-logs", {"nccl-tests-", "gb200"});
  t.seeds.insert(t.seeds.end(), more.begin(), more.end());
  // Every run of a mutated log (a mutation can split or merge runs), then the op from its columns.
  t.parse = [](const std::string& text) {
    const int runs = count_nccl_tests_runs(text);
    for (int i = 0; i < std::max(1, runs); ++i) (void)parse_nccl_tests(text, "fuzz", NcclTestsOp::unknown, i);
  };
  return t;
}

Target osu_target(const std::string&) {
  Target t;
  for (const char* s : kOsuSeeds) t.seeds.emplace_back(s);
  // The reader, then what validate / calibrate make of it (osu_run: MPI refused, NCCL as a run).
  t.parse = [](const std::string& text) {
    const OsuResult r = parse_osu(text, "fuzz");
    refuse_mpi_osu(text, "fuzz");
    (void)nccl_tests_result_from_osu(r, 8, NcclTestsOp::unknown);
  };
  return t;
}

Target repro_mpi_target(const std::string&) {
  Target t;
  for (const char* s : kReproSeeds) t.seeds.emplace_back(s);
  t.parse = [](const std::string& text) { (void)parse_repro_mpi(text, "fuzz"); };
  return t;
}

Target nccl_log_target(const std::string& data) {
  Target t;
  t.seeds = files_in(data + "nccl-logs", {".log"});
  t.parse = [](const std::string& text) {
    try {
      (void)parse_nccl_log(text, "fuzz");
    } catch (const commstack::InputError&) {
    }
    (void)parse_nccl_log(text, "fuzz", {true});
  };
  return t;
}

Target topo_xml_target(const std::string& data) {
  Target t;
  t.seeds = files_in(data + "nccl-logs", {"-topo.xml", "graph.xml", "excerpts.xml"});
  // The parse, then the node model built from it (topo --from-nccl-xml) and its cluster check.
  t.parse = [](const std::string& text) {
    const NodeTopology xml = parse_nccl_topo_xml(text, "fuzz");
    static const nlohmann::json base = commstack::topologies::load_cluster_document("dgx-h100");
    (void)commstack::topologies::parse_cluster(nlohmann::json(cluster_from_nccl_topo(xml, base, "dgx-h100")),
                                               "fuzz");
  };
  return t;
}

Target nccl_tests_json_target(const std::string&) {
  Target t;
  // nccl-tests -J output: the CLI fixture (the dgxc sweep in the JSON layout) is the seed.
  t.seeds = files_in(source_dir("/tests/cli"), {"nccl-tests-json-"});
  t.json_values = true;
  t.parse = [](const std::string& text) {
    (void)looks_like_nccl_tests_json(text);
    (void)parse_nccl_tests_json(text, "fuzz");
  };
  return t;
}

Target bench_json_target(const std::string&) {
  Target t;
  t.seeds.push_back(bench_seed());
  t.json_values = true;
  // The report, then what calibrate makes of it: every series as nccl-tests rows.
  t.parse = [](const std::string& text) {
    const commstack::bench::BenchReport r = commstack::bench::report_from_text(text, "fuzz");
    (void)bench_series(r, "fuzz");
  };
  return t;
}

Target published_table_target(const std::string& data) {
  Target t;
  t.seeds = files_in(data + "nccl-tests", {".csv"});
  t.parse = [](const std::string& text) {
    // Every selection the copied tables hold (and a few they do not): each must parse or refuse.
    std::vector<PublishedTableSelection> sels;
    for (const char* series : {"ndv5_h200_busbw_GBps", "ndv4_a100_busbw_GBps", "x"})
      sels.push_back({series, std::nullopt, NcclTestsOp::all_reduce, 1, 8});
    for (const char* config : {"1node_8gpu", "2node_1gpu", "2node_8gpu", "intra-node", "inter-node"})
      for (NcclTestsOp op : {NcclTestsOp::all_reduce, NcclTestsOp::all_gather, NcclTestsOp::alltoall,
                             NcclTestsOp::reduce_scatter, NcclTestsOp::sendrecv}) {
        sels.push_back({std::nullopt, config, op, std::nullopt, std::nullopt});
        sels.push_back({std::nullopt, config, op, 2, 8});
      }
    for (std::size_t i = 0; i + 1 < sels.size(); ++i) {
      try {
        (void)parse_published_table(text, "fuzz", sels[i]);
      } catch (const commstack::InputError&) {
      }
    }
    (void)parse_published_table(text, "fuzz", sels.back());
  };
  return t;
}

Target cluster_json_target(const std::string&) {
  Target t;
  // Cluster files (topo / collective / train --cluster FILE) are users' input too: every preset's
  // JSON is a seed; the parse, then the topology built on at most 4 nodes (bounded time) and its
  // connectivity check.
  for (const auto& name : commstack::topologies::preset_names())
    t.seeds.push_back(commstack::topologies::preset_json(name));
  t.json_values = true;
  t.parse = [](const std::string& text) {
    const auto j = json_or_refuse<nlohmann::json>(text);
    const auto spec = commstack::topologies::parse_cluster(j, "fuzz");
    (void)commstack::topologies::build_topology(spec, std::min(spec.nodes, 4));
  };
  return t;
}

Target profile_json_target(const std::string&) {
  Target t;
  // Calibration profiles (--profile FILE, calibrate --prior / --host-from) are users' input too: the
  // shipped profiles are the seeds; the parse, then one prediction per collective shape that reads
  // every layer's parameters (one node: NVLink, NVLS; two nodes: the network).
  for (const auto& [name, text] : commstack::sim::stack::embedded_profile_files()) t.seeds.emplace_back(text);
  t.json_values = true;
  t.parse = [](const std::string& text) {
    const auto j = json_or_refuse<nlohmann::json>(text);
    const auto profile = commstack::sim::stack::profile_from_json(j, "fuzz");
    static const auto cluster = commstack::topologies::load_cluster("dgx-h100");
    for (const int nodes : {1, 2}) {
      const commstack::sim::stack::Predictor pr(cluster, nodes, 8);
      for (const std::uint64_t bytes : {std::uint64_t{1024}, std::uint64_t{1} << 28}) {
        // A profile the parser accepts is within every parameter's physical range: its times are too.
        const double s = pr.predict(commstack::sim::CollectiveOp::allreduce, bytes, profile).time_s;
        if (!std::isfinite(s) || !(s > 0))
          throw std::runtime_error("a parsed profile predicts a time of " + std::to_string(s) + " s");
      }
    }
  };
  return t;
}

Target scenario_json_target(const std::string&) {
  Target t;
  // What-if scenarios (commstack whatif FILE; a sweep's jobs have the same shape): the built-in
  // scenarios and the CLI tests' small one are the seeds; the parse, then every run prepared for
  // simulation (cluster built, model and parallelism checked), not simulated.
  for (const auto& name : commstack::sim::scenario::builtin_scenario_names())
    t.seeds.push_back(commstack::sim::scenario::builtin_scenario_json(name));
  auto more = files_in(source_dir("/tests/cli/whatif"), {"small.json"});
  t.seeds.insert(t.seeds.end(), more.begin(), more.end());
  t.json_values = true;
  t.parse = [](const std::string& text) {
    const auto j = json_or_refuse<nlohmann::json>(text);
    const auto sc = commstack::sim::scenario::parse_scenario(j, "fuzz");
    for (const auto& run : sc.runs) (void)commstack::sim::scenario::prepare_job(run.job, run.place);
  };
  return t;
}

Target sweep_json_target(const std::string&) {
  Target t;
  // Sweep files (commstack sweep FILE): the CLI tests' sweeps are the seeds; the parse (grid paths
  // checked against the base job), the points expanded, and the first few applied to the base
  // and prepared for simulation (not simulated).
  t.seeds = files_in(source_dir("/tests/cli/sweep"), {".json"});
  t.json_values = true;
  t.parse = [](const std::string& text) {
    namespace sw = commstack::sim::sweep;
    namespace scn = commstack::sim::scenario;
    const auto j = json_or_refuse<nlohmann::ordered_json>(text);
    const sw::SweepSpec spec =
        sw::parse_sweep(j, "fuzz", source_dir("/tests/cli/sweep"), sw::resolve_training_base);
    const auto points = sw::expand(spec);
    for (std::size_t i = 0; i < std::min<std::size_t>(points.size(), 4); ++i) {
      const scn::JsonPlace at{"fuzz point " + points[i].id, "$"};
      try {
        (void)scn::prepare_job(scn::apply_overrides(spec.base, sw::training_overrides(spec, points[i]), at),
                               at);
      } catch (const commstack::InputError&) {
        // An impossible point is the sweep's normal business (the seed has six): the next one.
      }
    }
  };
  return t;
}

using TargetFactory = Target (*)(const std::string& data);

const std::map<std::string, TargetFactory>& targets() {
  static const std::map<std::string, TargetFactory> t = {
      {"nccl_tests", nccl_tests_target},
      {"nccl_tests_json", nccl_tests_json_target},
      {"osu", osu_target},
      {"repro_mpi", repro_mpi_target},
      {"nccl_log", nccl_log_target},
      {"topo_xml", topo_xml_target},
      {"published_table", published_table_target},
      {"bench_json", bench_json_target},
      {"cluster_json", cluster_json_target},
      {"profile_json", profile_json_target},
      {"scenario_json", scenario_json_target},
      {"sweep_json", sweep_json_target},
  };
  return t;
}

// Mutates the seeds `iterations` times (or until `max_seconds`), fixed seed: the same inputs every
// run. 0 when every input parsed or was refused with InputError, 1 at the first other exception.
int fuzz(const std::string& name, const Target& t, long iterations, double max_seconds,
         std::uint64_t generator_seed) {
  std::mt19937_64 rng(generator_seed);
  const auto start = std::chrono::steady_clock::now();
  long done = 0, accepted = 0, rejected = 0;
  for (; done < iterations; ++done) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > max_seconds) break;
    const std::string& seed = t.seeds[static_cast<std::size_t>(rng() % t.seeds.size())];
    std::string input = done < static_cast<long>(t.seeds.size()) ? t.seeds[static_cast<std::size_t>(done)]
                        : t.json_values && rng() % 2 == 0 ? commstack::fuzz::mutate_json_values(seed, rng)
                                                          : mutate(seed, rng);
    try {
      t.parse(input);
      ++accepted;
    } catch (const commstack::InputError&) {
      ++rejected;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "iteration %ld: unexpected exception (not InputError): %s\n", done, e.what());
      return 1;
    }
  }
  std::printf("fuzz %s: %ld inputs (%zu seeds), %ld parsed, %ld rejected with InputError\n", name.c_str(),
              done, t.seeds.size(), accepted, rejected);
  return 0;
}

int fuzz_main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::string names;
    for (const auto& [name, factory] : targets()) names += (names.empty() ? "" : "|") + name;
    std::fprintf(stderr, "usage: %s <%s> <iterations> <max_seconds> [generator seed]\n", argv[0],
                 names.c_str());
    return 2;
  }
  const std::string name = argv[1];
  const long iterations = std::stol(argv[2]);
  const double max_seconds = std::stod(argv[3]);
  // CI runs the fixed default; another seed explores other inputs, as reproducibly (a long local run).
  const std::uint64_t generator_seed = argc == 5 ? std::stoull(argv[4]) : 0xC0FFEEu;
  const auto it = targets().find(name);
  if (it == targets().end()) {
    std::fprintf(stderr, "unknown target '%s'\n", name.c_str());
    return 2;
  }
  const std::string data = source_dir("/calibration/data/");
  const Target t = it->second(data);
  if (t.seeds.empty()) {
    std::fprintf(stderr, "no seed files found for target %s\n", name.c_str());
    return 2;
  }
  return fuzz(name, t, iterations, max_seconds, generator_seed);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return fuzz_main(argc, argv);
  } catch (const std::exception& e) {  // a bad <iterations> / <max_seconds>, an unreadable seed
    std::fprintf(stderr, "commstack_fuzz_parsers: %s\n", e.what());
    return 2;
  }
}
