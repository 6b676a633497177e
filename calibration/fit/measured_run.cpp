#include "calibration/fit/measured_run.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "calibration/fit/bench_json.hpp"
#include "calibration/fit/nccl_log.hpp"
#include "calibration/fit/nccl_tests.hpp"
#include "calibration/fit/nccl_tests_json.hpp"
#include "calibration/fit/nccl_tests_table_op.hpp"
#include "calibration/fit/node_from_topo_xml.hpp"
#include "calibration/fit/osu_run.hpp"
#include "calibration/fit/published_table.hpp"
#include "calibration/fit/text_lines.hpp"
#include "common/error.hpp"
#include "common/input_file.hpp"
#include "common/units.hpp"
#include "sim/protocol/protocol.hpp"

namespace commstack::fit {
namespace {

using sim::stack::Param;
using sim::stack::Profile;

int parse_int(const std::string& v, const std::string& what) {
  try {
    std::size_t pos = 0;
    int x = std::stoi(v, &pos);
    if (pos != v.size()) throw std::invalid_argument("trailing");
    return x;
  } catch (const std::exception&) {
    throw InputError(fmt::format("{}: expected an integer, got \"{}\"", what, v));
  }
}

// An on/off run-spec key: 0 or 1, else InputError "<what>: expected 0 or 1<why>".
bool parse_0_or_1(const std::string& v, const std::string& what, const char* why = "") {
  const int x = parse_int(v, what);
  if (x != 0 && x != 1) throw InputError(fmt::format("{}: expected 0 or 1{}", what, why));
  return x == 1;
}

}  // namespace

RunSpec parse_run_spec(const std::string& text, const std::string& flag) {
  RunSpec spec;
  const auto at = text.find('@');
  spec.file = text.substr(0, at);
  if (spec.file.empty()) throw InputError(fmt::format("{} {}: expected FILE[@key=value,...]", flag, text));
  if (at == std::string::npos) return spec;
  spec.knob_text = text.substr(at + 1);
  std::size_t pos = 0;
  const std::string rest = spec.knob_text;
  while (pos <= rest.size()) {
    auto comma = rest.find(',', pos);
    const std::string item = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? rest.size() + 1 : comma + 1;
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(fmt::format("{} {}: \"{}\" is not key=value", flag, text, item));
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    const std::string what = fmt::format("{} {}: {}", flag, text, key);
    if (key == "cluster") {
      spec.cluster = value;
    } else if (key == "nodes") {
      spec.nodes = parse_int(value, what);
    } else if (key == "gpus_per_node") {
      spec.gpus_per_node = parse_int(value, what);
    } else if (key == "op") {
      spec.op = value;
    } else if (key == "run") {
      spec.run = parse_int(value, what);
      if (*spec.run < 1)
        throw InputError(fmt::format("{}: expected >= 1 (the log's first nccl-tests run is 1)", what));
    } else if (key == "series") {
      spec.series = value;
    } else if (key == "config") {
      spec.config = value;
    } else if (key == "min_bytes") {
      spec.min_bytes = parse_bytes(value, what);
    } else if (key == "max_bytes") {
      spec.max_bytes = parse_bytes(value, what);
    } else if (key == "algo") {
      spec.knobs.env.algo = value;
    } else if (key == "proto") {
      spec.knobs.env.proto = value;
    } else if (key == "min_ctas") {
      spec.knobs.env.min_ctas = parse_int(value, what);
    } else if (key == "max_ctas") {
      spec.knobs.env.max_ctas = parse_int(value, what);
    } else if (key == "nvls") {
      spec.knobs.env.nvls_enable = parse_0_or_1(value, what) ? 1 : 0;
    } else if (key == "mnnvl") {
      spec.knobs.env.mnnvl_enable = parse_0_or_1(value, what, " (NCCL_MNNVL_ENABLE)") ? 1 : 0;
    } else if (key == "collnet") {
      spec.knobs.collnet = parse_0_or_1(value, what, " (NCCL_COLLNET_ENABLE)");
    } else if (key == "cuda_graph") {
      spec.cuda_graph = parse_0_or_1(value, what, " (nccl-tests -G: 1 when > 0)");
    } else if (key == "in_place") {
      spec.in_place =
          parse_0_or_1(value, what, " (1: the in-place time column / a table of in-place numbers)");
    } else if (key == "nccl_version") {
      spec.nccl_version = select::parse_nccl_version(value, what);
    } else if (key == "gpus_per_thread") {
      spec.gpus_per_thread = parse_int(value, what);
      if (*spec.gpus_per_thread < 1) throw InputError(fmt::format("{}: expected >= 1 (nccl-tests -g)", what));
    } else {
      throw InputError(
          fmt::format("{} {}: unknown key \"{}\" (expected cluster, nodes, gpus_per_node, op, run, series, "
                      "config, min_bytes, max_bytes, algo, proto, min_ctas, max_ctas, nvls, mnnvl, "
                      "collnet, gpus_per_thread, cuda_graph, in_place, nccl_version)",
                      flag, text, key));
    }
  }
  select::EnableMatrix check;  // an unknown algorithm / protocol is an error naming the input
  if (spec.knobs.env.algo)
    select::apply_nccl_list(*spec.knobs.env.algo, fmt::format("{} {}: algo", flag, text), true, check);
  if (spec.knobs.env.proto)
    select::apply_nccl_list(*spec.knobs.env.proto, fmt::format("{} {}: proto", flag, text), false, check);
  select::validate(spec.knobs.env);
  return spec;
}

namespace {

// NCCL settings the log shows for the run (NCCL_DEBUG=INFO "set by environment" lines, launcher
// "-x NCCL_ALGO=Ring" words): applied like the matching key, unless the spec (a flag or a key)
// sets that knob itself. Each one applied becomes a note, so the reader sees what was assumed.
void apply_logged_env(const RunSpec& spec, const NcclTestsResult& log, MeasuredRun& run) {
  auto& env = run.knobs.env;
  const select::NcclEnv unset;
  for (const auto& entry : log.env) {
    // Named references rather than a structured binding: the lambda below captures them, which
    // clang accepts only from version 16 (C++20 P1091).
    const auto& name = entry.first;
    const auto& setting = entry.second;
    const std::string where = setting.line > 0
                                  ? fmt::format("{}:{}: {}={}", spec.file, setting.line, name, setting.value)
                                  : fmt::format("{}: env {}={}", spec.file, name, setting.value);
    auto integer = [&](long lo, long hi) {
      const std::int64_t v = detail::need_int(setting.value, spec.file, setting.line, name);
      if (v < lo || v > hi) throw InputError(fmt::format("{}: expected an integer {}..{}", where, lo, hi));
      return static_cast<int>(v);
    };
    // NCCL's own handling of a CTA count (src/init.cc): <= 0 is ignored ("too low, leaving it
    // set"), above MAXCHANNELS (64) capped to it; the log shows what NCCL was given, not what it ran.
    auto ctas = [&](int& knob) {
      const std::int64_t v = detail::need_int(setting.value, spec.file, setting.line, name);
      if (v <= 0) {
        run.notes.push_back(fmt::format(
            "{}: NCCL ignores a CTA count <= 0 (leaves it unset), as the prediction does", where));
        return false;
      }
      knob = static_cast<int>(std::min<std::int64_t>(v, 64));
      if (v > 64)
        run.notes.push_back(
            fmt::format("{}: NCCL caps it to 64 channels (MAXCHANNELS), as the prediction does", where));
      return true;
    };
    bool applied = true;
    if (name == "NCCL_ALGO" && !spec.knobs.env.algo) {
      select::EnableMatrix check;
      select::apply_nccl_list(setting.value, where, true, check);
      env.algo = setting.value;
    } else if (name == "NCCL_PROTO" && !spec.knobs.env.proto) {
      select::EnableMatrix check;
      select::apply_nccl_list(setting.value, where, false, check);
      env.proto = setting.value;
    } else if ((name == "NCCL_MIN_CTAS" || name == "NCCL_MIN_NCHANNELS") &&
               spec.knobs.env.min_ctas == unset.min_ctas && env.min_ctas == unset.min_ctas) {
      applied = ctas(env.min_ctas);
    } else if ((name == "NCCL_MAX_CTAS" || name == "NCCL_MAX_NCHANNELS") &&
               spec.knobs.env.max_ctas == unset.max_ctas && env.max_ctas == unset.max_ctas) {
      applied = ctas(env.max_ctas);
    } else if (name == "NCCL_NVLS_ENABLE" && spec.knobs.env.nvls_enable == unset.nvls_enable) {
      env.nvls_enable = integer(0, 2);
    } else if (name == "NCCL_MNNVL_ENABLE" && spec.knobs.env.mnnvl_enable == unset.mnnvl_enable) {
      env.mnnvl_enable = integer(0, 2);
    } else if (name == "NCCL_PAT_ENABLE" && spec.knobs.env.pat_enable == unset.pat_enable) {
      env.pat_enable = integer(0, 2);
    } else if (name == "NCCL_NTHREADS" && spec.knobs.env.nthreads == unset.nthreads) {
      env.nthreads = integer(64, 640);
    } else if (name == "NCCL_LL128_NTHREADS" && spec.knobs.env.ll128_nthreads == unset.ll128_nthreads) {
      env.ll128_nthreads = integer(64, 640);
    } else if (name == "NCCL_NVLS_CHUNKSIZE" && spec.knobs.env.nvls_chunksize == unset.nvls_chunksize) {
      env.nvls_chunksize = integer(1, 1L << 30);
    } else if (name == "NCCL_NVLSTREE_MAX_CHUNKSIZE" &&
               spec.knobs.env.nvlstree_max_chunksize == unset.nvlstree_max_chunksize) {
      env.nvlstree_max_chunksize = integer(1, 1L << 30);
    } else if (name == "NCCL_ALLOC_P2P_NET_LL_BUFFERS" &&
               spec.knobs.env.alloc_p2p_net_ll_buffers == unset.alloc_p2p_net_ll_buffers) {
      // src/init.cc: comm->allocP2pNetLLBuffers = ncclParamAllocP2pNetLLBuffers() == 1.
      env.alloc_p2p_net_ll_buffers = detail::need_int(setting.value, spec.file, setting.line, name) == 1;
    } else if (name == "NCCL_NET_SHARED_BUFFERS" &&
               spec.knobs.env.net_shared_buffers == unset.net_shared_buffers) {
      env.net_shared_buffers = integer(-2, 1 << 30);
    } else if (name == "NCCL_BUFFSIZE" && spec.knobs.buffsize == 0) {
      const std::int64_t v = detail::need_int(setting.value, spec.file, setting.line, name);
      if (v <= 0) throw InputError(fmt::format("{}: expected a positive number of bytes", where));
      sim::protocol::check_buffer_bytes(static_cast<std::uint64_t>(v), where);
      run.knobs.buffsize = static_cast<std::uint64_t>(v);
    } else {
      applied = false;
    }
    if (applied)
      run.notes.push_back(fmt::format(
          "{}={} ({}) applied, as NCCL did", name, setting.value,
          setting.line > 0 ? fmt::format("line {} of the log", setting.line) : "the run's environment"));
  }
  // NCCL sets both to the maximum when the minimum is larger (src/init.cc "set both to"); a flag or
  // key that set either keeps its own check (select::validate below).
  if (env.min_ctas > 0 && env.max_ctas > 0 && env.min_ctas > env.max_ctas &&
      spec.knobs.env.min_ctas == unset.min_ctas && spec.knobs.env.max_ctas == unset.max_ctas) {
    run.notes.push_back(
        fmt::format("{}: NCCL_MIN_CTAS {} is larger than NCCL_MAX_CTAS {}: NCCL sets both to {}, "
                    "as the prediction does",
                    spec.file, env.min_ctas, env.max_ctas, env.max_ctas));
    env.min_ctas = env.max_ctas;
  }
  try {
    select::validate(env);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: NCCL settings shown in the log: {}", spec.file, e.what()));
  }
}

// NCCL's per-call TUNING lines in an nccl-tests log (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=TUNING):
// the algorithm and protocol NCCL ran for each measured size. All-reduce, broadcast and reduce, whose
// nBytes is the size column (all-gather and reduce-scatter print per-rank bytes), printed between the
// table's header and its last row (a file can hold several runs). Sizes logged with two different
// choices are left to the model; a log whose NCCL lines cannot be read keeps the model's selection,
// with a note, and so does one whose lines are all another collective's or outside the table.
void read_logged_choices(const RunSpec& spec, std::string_view text, const NcclTestsResult& table,
                         MeasuredRun& run) {
  std::string func;  // NCCL's name of the collective in its TUNING lines
  if (run.op == sim::CollectiveOp::allreduce)
    func = "AllReduce";
  else if (run.op == sim::CollectiveOp::broadcast)
    func = "Broadcast";
  else if (run.op == sim::CollectiveOp::reduce)
    func = "Reduce";
  if (text.find(" Bytes -> Algo ") == std::string::npos) return;  // no TUNING lines: nothing to use
  if (func.empty()) {
    run.notes.push_back(
        fmt::format("{}: NCCL's TUNING lines not used: for {} they count per-rank bytes, not the "
                    "size column; algorithms and protocols are the model's",
                    spec.file, sim::to_string(run.op)));
    return;
  }
  NcclLog log;
  try {
    log = parse_nccl_log(text, spec.file, NcclLogOptions{true});
  } catch (const InputError& e) {
    run.notes.push_back(
        fmt::format("NCCL's TUNING lines not used ({}): algorithms and protocols are the model's", e.what()));
    return;
  }
  // A TUNING line that cannot be read (an unknown algorithm, a channel range NCCL cannot print) is
  // skipped: its size keeps the model's selection, and the note says which lines.
  if (!log.tuning_skipped.empty()) {
    const std::size_t n = log.tuning_skipped.size();
    run.notes.push_back(fmt::format(
        "{} of NCCL's TUNING lines cannot be read and are not used (their sizes keep the model's algorithm "
        "and protocol): {}{}",
        n,
        fmt::join(log.tuning_skipped.begin(),
                  log.tuning_skipped.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(n, 3)),
                  "; "),
        n > 3 ? "; ..." : ""));
  }
  std::map<std::uint64_t, MeasuredRun::LoggedChoice> seen;
  std::set<std::uint64_t> conflicting;
  int outside = 0, other_op = 0;
  for (const auto& c : log.choices) {
    // Only the lines printed while this table ran (a file can hold several runs).
    if (c.line < table.table_first_line || c.line > table.table_last_line) {
      ++outside;
      continue;
    }
    if (!c.func.empty() && c.func != func) {
      ++other_op;
      continue;
    }
    select::Algo algo;
    select::Proto proto;
    if (!select::parse_algo(c.algo, algo) || !select::parse_proto(c.proto, proto)) continue;
    const auto [it, fresh] = seen.try_emplace(c.bytes, MeasuredRun::LoggedChoice{algo, proto, c.line});
    if (!fresh && (it->second.algo != algo || it->second.proto != proto)) conflicting.insert(c.bytes);
  }
  int used = 0;
  for (const std::uint64_t b : run.bytes) {
    const auto it = seen.find(b);
    if (it == seen.end() || conflicting.count(b)) continue;
    run.logged_choices.emplace(b, it->second);
    ++used;
  }
  if (used == 0 && (outside > 0 || other_op > 0)) {
    std::vector<std::string> why;
    if (outside > 0)
      why.push_back(fmt::format("{} lie outside this run's table (lines {}-{})", outside,
                                table.table_first_line, table.table_last_line));
    if (other_op > 0) why.push_back(fmt::format("{} name another collective than {}", other_op, func));
    run.notes.push_back(
        fmt::format("{}: NCCL's TUNING lines not used ({}): algorithms and protocols are the model's",
                    spec.file, fmt::join(why, ", ")));
  }
  if (used > 0)
    run.notes.push_back(fmt::format(
        "{}: NCCL's TUNING lines give the algorithm and protocol of {} of the {} sizes: "
        "those are predicted with NCCL's choice{}",
        spec.file, used, run.bytes.size(),
        conflicting.empty()
            ? ""
            : fmt::format(" ({} sizes logged with two choices are the model's)", conflicting.size())));
}

}  // namespace

sim::stack::Predictor::Choice choose_for_run(
    const MeasuredRun& run, const sim::stack::Predictor& predictor, std::uint64_t bytes,
    std::map<std::pair<int, int>, std::unique_ptr<sim::stack::Predictor>>& forced,
    std::optional<std::string>* model, std::optional<std::string>* unavailable) {
  auto modelled = predictor.choose(run.op, bytes);  // not const: returned by move
  const auto it = run.logged_choices.find(bytes);
  if (it == run.logged_choices.end()) return modelled;
  const auto& logged = it->second;
  auto& slot = forced[{select::idx(logged.algo), select::idx(logged.proto)}];
  if (!slot) {
    sim::stack::Knobs k = run.knobs;
    k.env.algo = select::to_string(logged.algo);
    k.env.proto = select::to_string(logged.proto);
    slot = std::make_unique<sim::stack::Predictor>(run.cluster, run.nodes, run.gpus_per_node, k);
  }
  const auto cannot_run = [&] {
    if (unavailable)
      *unavailable = fmt::format("{}/{}", select::to_string(logged.algo), select::to_string(logged.proto));
    return modelled;
  };
  sim::stack::Predictor::Choice c;
  try {
    c = slot->choose(run.op, bytes);
  } catch (const InputError&) {
    return cannot_run();  // a pair the modelled communicator does not allow (say NVLS on a preset without it)
  }
  if (c.algo != logged.algo || c.proto != logged.proto) return cannot_run();
  if (model && (modelled.algo != logged.algo || modelled.proto != logged.proto))
    *model = fmt::format("{}/{}", select::to_string(modelled.algo), select::to_string(modelled.proto));
  return c;
}

namespace {

// The GPU part a name gives ("NVIDIA H800" -> "h800", "H100-SXM5-80GB" -> "h100"), with the board
// when it is not the SXM module the presets describe ("NVIDIA H100 PCIe" -> "h100 pcie", "NVIDIA
// H100 NVL" -> "h100 nvl": other NVLink, a bridge or none); "" when none of these. Longer names
// first: h200 before h20, a100 before a10, l40s before l40 and l4.
std::string gpu_part(const std::string& name) {
  static constexpr std::array<std::string_view, 19> kParts{
      "gb300", "gb200", "gh200", "b300", "b200", "b100", "h800", "h200", "h100", "h20",
      "a800",  "a100",  "a40",   "a30",  "a10",  "v100", "l40s", "l40",  "l4"};
  const std::string lower_name = detail::lower(name);
  static const std::regex kNvlBoard(R"(\bnvl\b)");  // "H100 NVL", not a rack's "NVL72"
  const std::string board = lower_name.find("pcie") != std::string::npos ? " pcie"
                            : std::regex_search(lower_name, kNvlBoard)   ? " nvl"
                                                                         : "";
  for (auto part : kParts)
    if (lower_name.find(part) != std::string::npos) return std::string(part) + board;
  return "";
}

// The rank lines' GPU against the cluster's: a log of another GPU generation or part validated on a
// preset is predicted for the preset's hardware, which the user should see said.
void note_gpu_mismatch(const std::string& file, const std::string& log_gpu, MeasuredRun& run) {
  if (log_gpu.empty()) return;
  const int log_sm = sim::stack::sm_of_gpu_model(log_gpu);
  const int cluster_sm = sim::stack::sm_of_gpu_model(run.cluster.node.gpu_model);
  const std::string log_part = gpu_part(log_gpu), cluster_part = gpu_part(run.cluster.node.gpu_model);
  const bool same_part = log_part.empty() || cluster_part.empty() || log_part == cluster_part;
  if (log_sm != 0 && log_sm == cluster_sm && same_part) return;
  const std::string why = log_sm == cluster_sm
                              ? "the same generation, another part: its NVLink, NICs and clocks may "
                                "differ"
                              : "another GPU generation";
  run.notes.push_back(
      log_sm == 0
          ? fmt::format(
                "{}: the rank lines name a '{}', a GPU commstack has no model of; the prediction is for "
                "cluster {}'s {}",
                file, log_gpu, run.cluster_name, run.cluster.node.gpu_model)
          : fmt::format(
                "{}: the rank lines name a '{}' but cluster {} is built around the {} ({}): the prediction "
                "is for the cluster's hardware, not the log's",
                file, log_gpu, run.cluster_name, run.cluster.node.gpu_model, why));
}

// The run of a log that holds several nccl-tests runs: the spec's run=N, else the one run whose
// own op (test-start line, command, columns) is the spec's op. Refuses, listing the runs, when
// neither decides: picking the first would validate the wrong collective without a word.
// `runs` is count_nccl_tests_runs(text).
int pick_nccl_tests_run(const std::string& text, int runs, const RunSpec& spec, NcclTestsOp hint) {
  if (spec.run) {
    if (*spec.run > runs)
      throw InputError(fmt::format("{}: run {} asked for, but the log holds {} nccl-tests run(s)", spec.file,
                                   *spec.run, runs));
    return *spec.run - 1;
  }
  if (runs <= 1) return 0;
  std::vector<std::string> listing;
  std::vector<int> matching;
  for (int i = 0; i < runs; ++i) {
    // A run that does not parse is listed with its reason; it does not keep the others from use.
    try {
      const NcclTestsResult r = parse_nccl_tests(text, spec.file, NcclTestsOp::unknown, i);
      listing.push_back(fmt::format("{}: {} (lines {}-{}, {} sizes)", i + 1, to_string(r.op),
                                    r.table_first_line, r.table_last_line, r.rows.size()));
      if (hint != NcclTestsOp::unknown && r.op == hint) matching.push_back(i);
    } catch (const InputError& e) {
      listing.push_back(fmt::format("{}: unreadable ({})", i + 1, e.what()));
    }
  }
  if (matching.size() == 1) return matching.front();
  if (hint == NcclTestsOp::unknown)
    throw InputError(
        fmt::format("{}: the log holds {} nccl-tests runs ({}); say which with --run N (calibrate: {}@run=N) "
                    "or the op (--op, op=)",
                    spec.file, runs, fmt::join(listing, "; "), spec.file));
  throw InputError(fmt::format(
      "{}: {} of the log's {} nccl-tests runs are {} ({}); say which with --run N (calibrate: {}@run=N)",
      spec.file, matching.empty() ? "none" : std::to_string(matching.size()), runs, to_string(hint),
      fmt::join(listing, "; "), spec.file));
}

// The measurements a run spec names, read by the reader of their format.
struct LoadedLog {
  NcclTestsResult log;
  std::string text;        // an nccl-tests log's text (its TUNING lines are read after the table)
  bool one_column = true;  // bench JSON, published tables and OSU carry one time (kept as out_of_place)
};

// The op the spec asks for (unknown: none asked).
NcclTestsOp op_hint_of(const RunSpec& spec) {
  if (!spec.op) return NcclTestsOp::unknown;
  const NcclTestsOp hint = nccl_tests_op_from_name(*spec.op);
  if (hint == NcclTestsOp::unknown)
    throw InputError(fmt::format("{}: op \"{}\" is not an nccl-tests collective", spec.file, *spec.op));
  return hint;
}

// Reads spec.file by its format: a commstack-bench JSON (it holds many series, ops x algorithms x
// protocols x channel counts: the run spec's op / algo / proto / max_ctas pick one, exactly as
// NCCL_ALGO etc. picked it there), a published table, nccl-tests -J JSON, OSU output or nccl-tests
// text. A format's own notes and settings (OSU: each call timed alone) go into `run`.
LoadedLog read_measurements(const RunSpec& spec, NcclTestsOp hint, MeasuredRun& run) {
  LoadedLog in;
  NcclTestsResult& log = in.log;
  std::string& log_text = in.text;
  bool osu = false;  // OSU output: one time (kept as out_of_place), no TUNING lines
  // Read once: the file may be a pipe (/dev/stdin, <(...)) that a second open finds drained.
  log_text = read_input_file(spec.file, "measured run");
  if (looks_like_bench_json(log_text)) {
    if (hint == NcclTestsOp::unknown)
      throw InputError(
          fmt::format("{}: a commstack-bench file holds several collectives; say which with {}@op=all_reduce",
                      spec.file, spec.file));
    const std::string algo = spec.knobs.env.algo.value_or("default");
    const std::string proto = spec.knobs.env.proto.value_or("default");
    const int ctas = spec.knobs.env.min_ctas > 0 && spec.knobs.env.min_ctas == spec.knobs.env.max_ctas
                         ? spec.knobs.env.max_ctas
                         : 0;
    log =
        select_bench_series(bench::report_from_text(log_text, spec.file), spec.file, hint, algo, proto, ctas)
            .result;
    log_text.clear();
  } else if (published_table_format(log_text) != PublishedTableFormat::none) {
    // A published table (vendor guide, docs, report summary): series / config / op pick the points.
    PublishedTableSelection sel;
    sel.series = spec.series;
    sel.config = spec.config;
    sel.op = hint;
    sel.nodes = spec.nodes;
    sel.gpus_per_node = spec.gpus_per_node;
    PublishedTableRun table = parse_published_table(log_text, spec.file, sel);
    log_text.clear();
    log = std::move(table.result);
    run.notes = std::move(table.notes);
  } else if (spec.series || spec.config) {
    throw InputError(
        fmt::format("{}: series= and config= select a published table's points, but this file is not "
                    "one (expected a CSV header starting message_size_label, config or collective)",
                    spec.file));
  } else {
    if (looks_like_nccl_tests_json(log_text)) {
      // nccl-tests -J: one run per file, the same fields as the text output.
      if (spec.run && *spec.run != 1)
        throw InputError(fmt::format("{}: run {} asked for, but an nccl-tests JSON file holds one run",
                                     spec.file, *spec.run));
      log = parse_nccl_tests_json(log_text, spec.file, hint);
      log_text.clear();
    } else if (looks_like_osu(log_text)) {
      // OSU: no rank lines, one benchmark per run, one time column; each call timed on its own.
      refuse_mpi_osu(log_text, spec.file);
      if (spec.run && *spec.run != 1)
        throw InputError(fmt::format("{}: run {} asked for, but OSU output is read one benchmark per file",
                                     spec.file, *spec.run));
      if (!spec.nodes || !spec.gpus_per_node || *spec.nodes < 1 || *spec.gpus_per_node < 1)
        throw InputError(
            fmt::format("{}: OSU output names no hosts or ranks: pass --nodes and --gpus-per-node "
                        "(calibrate: {}@nodes=N,gpus_per_node=G)",
                        spec.file, spec.file));
      log =
          nccl_tests_result_from_osu(parse_osu(log_text, spec.file), *spec.nodes * *spec.gpus_per_node, hint);
      run.knobs.synchronized_calls = true;
      log_text.clear();
      osu = true;
    } else {
      const int runs_in_log = count_nccl_tests_runs(log_text);
      const int run_index = pick_nccl_tests_run(log_text, runs_in_log, spec, hint);
      log = parse_nccl_tests(log_text, spec.file, hint, run_index);
      if (runs_in_log > 1)
        run.notes.push_back(fmt::format("{}: run {} of the log's {} nccl-tests runs (table at lines {}-{})",
                                        spec.file, run_index + 1, runs_in_log, log.table_first_line,
                                        log.table_last_line));
    }
    in.one_column = osu;
  }
  return in;
}

// The run's collective: the spec's op checked against what the output says, else the output's.
void resolve_op(const RunSpec& spec, NcclTestsOp hint, const NcclTestsResult& log, MeasuredRun& run) {
  // An explicit op that the output contradicts: the output's own line or its table's columns win
  // over a typo; a file name is weaker evidence (files get renamed), so it only earns a note.
  if (hint != NcclTestsOp::unknown) {
    if (log.table_op != NcclTestsOp::unknown && log.table_op != hint)
      throw InputError(fmt::format("{}: op {} contradicts the log: its table's columns give {} ({})",
                                   spec.file, to_string(hint), to_string(log.table_op), log.op_table_reason));
    if (!log.table_ops.empty() &&
        std::find(log.table_ops.begin(), log.table_ops.end(), hint) == log.table_ops.end())
      throw InputError(fmt::format("{}: op {} contradicts the log: its table's columns rule it out ({})",
                                   spec.file, to_string(hint), log.op_table_reason));
    if (log.logged_op != NcclTestsOp::unknown && log.logged_op != hint) {
      if (log.logged_op_source != "filename")
        throw InputError(fmt::format("{}: op {} contradicts the log: its {} gives {}", spec.file,
                                     to_string(hint), log.logged_op_source, to_string(log.logged_op)));
      run.notes.push_back(fmt::format("{}: op {} as asked, though the file name says {}", spec.file,
                                      to_string(hint), to_string(log.logged_op)));
    }
  }
  auto op = collective_op_of(log.op);
  if (log.op == NcclTestsOp::unknown)
    throw InputError(
        fmt::format("{}: cannot use this run: the file does not name its collective (no 'Collective test "
                    "starting' line, no *_perf command, no op in the file name) and its columns cannot "
                    "tell ({}); pass --op NAME (calibrate: {}@op=NAME)",
                    spec.file, log.op_table_reason, spec.file));
  // The file name alone decided (the columns agree when they can tell, and stay silent then).
  if (log.op_source == "filename" && log.table_op != log.op)
    run.notes.push_back(
        fmt::format("{}: collective {} taken from the file name (the log names none, and its "
                    "columns cannot tell: {}); --op overrides",
                    spec.file, to_string(log.op), log.op_table_reason));
  if (log.op_source == "table columns")
    run.notes.push_back(
        fmt::format("{}: collective {} read from the result table's columns ({}); --op overrides", spec.file,
                    to_string(log.op), log.op_table_reason));
  if (!op)
    throw InputError(
        fmt::format("{}: cannot use this run: its collective ({}) is not one the stack model predicts "
                    "(all_reduce, all_gather, reduce_scatter, alltoall, broadcast, reduce, sendrecv); "
                    "pass op=... if the file does not say",
                    spec.file, to_string(log.op)));
  run.op = *op;
}

// The cluster: the spec's, else the caller's default; "auto" is the preset of the rank lines' GPU.
void resolve_cluster(const RunSpec& spec, const std::optional<std::string>& default_cluster,
                     const NcclTestsResult& log, MeasuredRun& run) {
  const auto cluster = spec.cluster ? spec.cluster : default_cluster;
  if (!cluster)
    throw InputError(
        fmt::format("{}: cannot use this run: no cluster given (pass --cluster or {}@cluster=NAME)",
                    spec.file, spec.file));
  run.cluster_name = *cluster;
  if (*cluster == "auto") {
    // The preset of the GPU the rank lines name; the note says it is an assumption.
    if (log.gpu_model.empty())
      throw InputError(
          fmt::format("{}: cluster auto needs the log's rank lines ('#  Rank 0 Group 0 Pid ... NVIDIA "
                      "H100 ...') to name the GPU; this input has none: pass a preset or cluster file",
                      spec.file));
    const auto preset = topologies::preset_for_gpu(log.gpu_model);
    if (!preset) {
      // A GPU of a generation the presets cover (H800, H20, an NVL or PCIe part): its nearest preset.
      const std::string nearest = preset_for_sm(sim::stack::sm_of_gpu_model(log.gpu_model));
      throw InputError(fmt::format(
          "{}: cluster auto: no preset is built around a '{}' (presets: {}); {}pass a cluster file "
          "(docs/cluster-format.md)",
          spec.file, log.gpu_model, fmt::join(topologies::preset_names(), ", "),
          !nearest.empty()
              ? fmt::format("its generation's nearest is {} (--cluster {}: predicted for that preset's "
                            "NVLink and NICs, as a note will say), or ",
                            nearest, nearest)
              : ""));
    }
    run.cluster_name = *preset;
    run.notes.push_back(
        fmt::format("cluster auto: preset {} for the rank lines' '{}'; its NVLink, NICs and fabric "
                    "are the preset's, not necessarily this cluster's",
                    *preset, log.gpu_model));
  }
  run.cluster = topologies::load_cluster(run.cluster_name);
  note_gpu_mismatch(spec.file, log.gpu_model, run);
}

// Nodes and GPUs per node: the spec's, else the rank lines'; checked against each other and the cluster.
void resolve_shape(const RunSpec& spec, const NcclTestsResult& log, MeasuredRun& run) {
  const bool shape_known = log.ranks_complete && log.n_hosts > 0;
  if (spec.nodes)
    run.nodes = *spec.nodes;
  else if (shape_known)
    run.nodes = log.n_hosts;
  if (spec.gpus_per_node)
    run.gpus_per_node = *spec.gpus_per_node;
  else if (shape_known && log.gpus_per_node > 0)
    run.gpus_per_node = log.gpus_per_node;
  const bool need_nodes = !spec.nodes && !shape_known;
  const bool need_gpus = !spec.gpus_per_node && !(shape_known && log.gpus_per_node > 0);
  if (need_nodes || need_gpus) {
    // What is missing, said once for the flags and once for the run-spec keys.
    std::vector<std::string> what, flags, keys;
    if (need_nodes)
      what.emplace_back("the node count"), flags.emplace_back("--nodes N"), keys.emplace_back("nodes=N");
    if (need_gpus)
      what.emplace_back("GPUs per node"), flags.emplace_back("--gpus-per-node G"),
          keys.emplace_back("gpus_per_node=G");
    const auto counted = ranks_from_table(log, log.op);
    throw InputError(fmt::format(
        "{}: cannot use this run: its rank lines do not give {}{} (pass {}, or {}){}", spec.file,
        fmt::join(what, " or "),
        log.rank_lines_elided && !log.ranks.empty() ? " (a '...' line left some out)" : "",
        fmt::join(flags, " "), fmt::join(keys, ","),
        counted ? fmt::format("; its table was measured on {} ranks ({})", counted->ranks, counted->why)
                : std::string()));
  }
  // GPUs per node given that the cluster's nodes do not have (the stack model and the topology
  // refuse them too; said here before the table's shape checks, which would blame the log).
  if (spec.gpus_per_node)
    topologies::check_gpus_per_node(run.cluster, run.gpus_per_node,
                                    fmt::format("{}: --gpus-per-node (or gpus_per_node=)", spec.file));
  // A rank the log names that the shape given cannot hold (partial rank lines: "Rank 127" alone).
  if (!log.ranks.empty()) {
    const auto top =
        std::max_element(log.ranks.begin(), log.ranks.end(),
                         [](const NcclTestsRank& a, const NcclTestsRank& b) { return a.rank < b.rank; });
    if (top->rank >= run.nodes * run.gpus_per_node)
      throw InputError(
          fmt::format("{}: the log's rank lines name rank {}, but nodes x GPUs per node = {} x {} gives "
                      "ranks 0-{}",
                      spec.file, top->rank, run.nodes, run.gpus_per_node, run.nodes * run.gpus_per_node - 1));
  }
  // GPUs per node the rank lines show but the cluster's nodes do not have.
  if (!spec.gpus_per_node && run.gpus_per_node > run.cluster.node.gpus)
    throw InputError(fmt::format(
        "{}: the log's rank lines show {} GPUs per host, but cluster {}'s nodes have {} "
        "(a cluster file with {}-GPU nodes fits this log)",
        spec.file, run.gpus_per_node, run.cluster_name, run.cluster.node.gpus, run.gpus_per_node));
  if (run.nodes < 1 || run.gpus_per_node < 1)
    throw InputError(fmt::format("{}: nodes and GPUs per node must be >= 1", spec.file));
  if ((!spec.nodes || !spec.gpus_per_node) && log.n_ranks > 0 && log.ranks_complete &&
      log.n_ranks != run.nodes * run.gpus_per_node)
    throw InputError(fmt::format("{}: the log lists {} ranks but nodes x GPUs per node = {} x {}", spec.file,
                                 log.n_ranks, run.nodes, run.gpus_per_node));
}

// The shape must be the one that printed the table: nccl-tests' own columns (the bus factor, the
// count of the sharded ops) give the rank count, and a log with rank lines cut out ("...") or a
// mistyped --nodes would otherwise be predicted on other GPUs than it measured, with no word.
void check_table_ranks(const RunSpec& spec, const NcclTestsResult& log, const MeasuredRun& run) {
  const int n = run.nodes * run.gpus_per_node;
  const auto conflict = table_ranks_conflict(log, log.op, n);
  if (!conflict) return;
  const bool given = spec.nodes || spec.gpus_per_node;
  throw InputError(fmt::format(
      "{}: nodes x GPUs per node = {} x {} = {} ranks (from {}) did not print this table: {}; give the run's "
      "shape with --nodes N --gpus-per-node G (calibrate: {}@nodes=N,gpus_per_node=G)",
      spec.file, run.nodes, run.gpus_per_node, n,
      given ? "--nodes / --gpus-per-node" : "the log's rank lines", *conflict, spec.file));
}

// What the log says about how NCCL and nccl-tests ran (MNNVL, -g, the NCCL release, the channels,
// -G, -m), where the spec does not say otherwise.
void apply_logged_run_settings(const RunSpec& spec, const NcclTestsResult& log, MeasuredRun& run) {
  // NCCL's own word on a multi-node NVLink domain: "MNNVL 0" in its communicator line means it
  // found no usable fabric (no IMEX channel, NCCL_MNNVL_ENABLE=0) and the nodes talked over their NICs.
  // What NCCL printed wins over NCCL_MNNVL_ENABLE=1 in the log; a flag or a spec key wins over both.
  if (log.comm_mnnvl && *log.comm_mnnvl == 0 && run.cluster.node.nvlink_domain_nodes > 1 && run.nodes > 1 &&
      spec.knobs.env.mnnvl_enable == select::NcclEnv{}.mnnvl_enable && run.knobs.env.mnnvl_enable != 0) {
    run.knobs.env.mnnvl_enable = 0;
    run.notes.push_back(fmt::format(
        "{}:{}: NCCL printed MNNVL 0{}: it did not use cluster {}'s multi-node NVLink domain "
        "(no IMEX channel, or NCCL_MNNVL_ENABLE=0), so the nodes talk over their NICs, as --mnnvl off / "
        "mnnvl=0 predict",
        spec.file, log.comm_line, log.comm_nodes ? fmt::format(" with nNodes {}", *log.comm_nodes) : "",
        run.cluster_name));
  }
  // nccl-tests -g: the header's nGpus, unless the spec says (a published excerpt may lack the header).
  if (spec.gpus_per_thread)
    run.knobs.gpus_per_thread = *spec.gpus_per_thread;
  else if (log.run.n_gpus && *log.run.n_gpus >= 1)
    run.knobs.gpus_per_thread = *log.run.n_gpus;
  // NCCL's selection changes between releases: the spec's version, else the one the log printed
  // (NCCL_DEBUG=VERSION line, nccl-tests' nccl-library=), each noted when it is not modeled exactly.
  if (spec.nccl_version) {
    run.knobs.nccl_version = *spec.nccl_version;
  } else if (log.nccl_version) {
    if (const auto m = select::match_printed_version(*log.nccl_version)) {
      run.knobs.nccl_version = m->version;
      if (!m->exact)
        run.notes.push_back(fmt::format(
            "{}: the log was produced by NCCL {}, which has no tuning table here: algorithms, protocols and "
            "channels are chosen by NCCL {}'s tuning model (the nearest modeled release, "
            "docs/nccl-selection.md; "
            "nccl_version= or --nccl-version picks another)",
            spec.file, *log.nccl_version, select::to_string(m->version)));
    }
  }
  // The channels NCCL printed for this run's communicator (NCCL_DEBUG=INFO) are what it ran on:
  // they replace the modelled search's, and a note says whether the two agree.
  if (log.coll_channels) {
    int searched =
        sim::stack::Predictor(run.cluster, run.nodes, run.gpus_per_node, run.knobs).shape().n_channels;
    // NCCL prints its count after NCCL_MIN_CTAS / NCCL_MAX_CTAS (connect.cc): compare like with like.
    if (run.knobs.env.max_ctas > 0) searched = std::min(searched, run.knobs.env.max_ctas);
    if (run.knobs.env.min_ctas > 0) searched = std::max(searched, run.knobs.env.min_ctas);
    run.knobs.comm_channels = *log.coll_channels;
    if (log.nvls_channels && *log.nvls_channels > 0) run.knobs.nvls_channels = *log.nvls_channels;
    // "0 nvls channels": NCCL found no NVLS support (no multicast, NCCL_NVLS_ENABLE=0;
    // ncclNvlsInit leaves nvlsChannels 0), so NVLS and NVLSTree were not candidates. A spec key
    // or flag that turns NVLS on wins (the user says the log is not the run's).
    if (log.nvls_channels && *log.nvls_channels == 0 &&
        spec.knobs.env.nvls_enable == select::NcclEnv{}.nvls_enable && run.knobs.env.nvls_enable != 0) {
      run.knobs.env.nvls_enable = 0;
      run.notes.push_back(
          fmt::format("{}:{}: NCCL printed 0 nvls channels: NVLS was not available to it, so "
                      "NVLS and NVLSTree are left out, as --nvls off / nvls=0 predict",
                      spec.file, log.channels_line));
    }
    run.notes.push_back(
        *log.coll_channels == searched
            ? fmt::format("{}:{}: NCCL printed {} coll channels, as its search gives for this cluster",
                          spec.file, log.channels_line, *log.coll_channels)
            : fmt::format(
                  "{}:{}: NCCL printed {} coll channels where its search as modelled gives {} for this "
                  "cluster: the prediction uses the printed {}",
                  spec.file, log.channels_line, *log.coll_channels, searched, *log.coll_channels));
  }
  // nccl-tests -G: the header's "graph:" count, unless the spec says.
  if (spec.cuda_graph)
    run.knobs.cuda_graph = *spec.cuda_graph;
  else if (log.run.graph)
    run.knobs.cuda_graph = *log.run.graph > 0;
  // nccl-tests -m: calls grouped per launch. No shared run measures it, so the launch layer is not
  // modelled for it (docs/stack-model.md "Launch"); the note keeps that from passing unseen.
  if (log.run.agg_iters && *log.run.agg_iters > 1)
    run.notes.push_back(
        fmt::format("{}: agg iters {} (nccl-tests -m): {} calls went out in one group launch, where the "
                    "stack model prices a "
                    "launch per call; latency-bound sizes may be predicted slower than measured",
                    spec.file, *log.run.agg_iters, *log.run.agg_iters));
  if (run.knobs.gpus_per_thread > run.gpus_per_node)
    throw InputError(fmt::format("{}: {} GPUs per thread (nccl-tests -g) but {} GPUs per node", spec.file,
                                 run.knobs.gpus_per_thread, run.gpus_per_node));
}

// The sizes and times the run is predicted at: one time column, sizes > 0 inside the spec's window.
void take_rows(const RunSpec& spec, const NcclTestsResult& log, bool one_column, MeasuredRun& run) {
  // The time column: out-of-place unless the spec says in_place=1; for a one-column file
  // in_place=1 says its numbers are in-place.
  run.in_place = spec.in_place;
  const bool in_place_column = spec.in_place && !one_column;
  int zero_rows = 0;
  for (const auto& row : log.rows) {
    const auto& timing = in_place_column ? row.in_place : row.out_of_place;
    if (row.size_bytes == 0) ++zero_rows;
    if (row.size_bytes == 0 || !timing) continue;
    if (spec.min_bytes > 0 && row.size_bytes < spec.min_bytes) continue;
    if (spec.max_bytes > 0 && row.size_bytes > spec.max_bytes) continue;
    if (!(timing->time_us > 0)) continue;
    run.bytes.push_back(row.size_bytes);
    run.measured_us.push_back(timing->time_us);
  }
  // nccl-tests -N (run cycles) or -d all / -o all print a size more than once in one table.
  if (std::set<std::uint64_t> seen(run.bytes.begin(), run.bytes.end()); seen.size() < run.bytes.size())
    run.notes.push_back(
        fmt::format("{}: {} of the table's {} rows repeat a size (nccl-tests -N cycles, or several "
                    "types or reductions); each row is used on its own",
                    spec.file, run.bytes.size() - seen.size(), run.bytes.size()));
  if (zero_rows > 0)
    run.notes.push_back(
        fmt::format("{}: {} row(s) of 0 bytes not used (nccl-tests prints them when a size is "
                    "below one element per rank; there is nothing to move)",
                    spec.file, zero_rows));
  if (run.bytes.empty())
    throw InputError(
        fmt::format("{}: cannot use this run: no result row with size > 0 and a positive {} "
                    "time{}",
                    spec.file, in_place_column ? "in-place" : "out-of-place",
                    (spec.min_bytes || spec.max_bytes) ? " inside the size window" : ""));
}

}  // namespace

MeasuredRun load_measured_run(const RunSpec& spec, const std::optional<std::string>& default_cluster) {
  MeasuredRun run;
  run.file = spec.file;
  run.knobs = spec.knobs;
  run.knob_text = spec.knob_text;
  run.min_bytes = spec.min_bytes;
  run.max_bytes = spec.max_bytes;
  const NcclTestsOp hint = op_hint_of(spec);
  const LoadedLog in = read_measurements(spec, hint, run);
  const NcclTestsResult& log = in.log;
  run.notes.insert(run.notes.end(), log.notes.begin(), log.notes.end());
  apply_logged_env(spec, log, run);
  resolve_op(spec, hint, log, run);
  resolve_cluster(spec, default_cluster, log, run);
  resolve_shape(spec, log, run);
  check_table_ranks(spec, log, run);
  apply_logged_run_settings(spec, log, run);
  take_rows(spec, log, in.one_column, run);
  if (!in.one_column) read_logged_choices(spec, in.text, log, run);
  return run;
}

}  // namespace commstack::fit
