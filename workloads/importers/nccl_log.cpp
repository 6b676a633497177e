#include "workloads/importers/nccl_log.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"
#include "common/input_file.hpp"
#include "common/units.hpp"
#include "workloads/importers/trace_graph.hpp"

namespace commstack::workloads::importers {
namespace {

// ncclDataType_t element sizes (nccl.h: int8, uint8, int32, uint32, int64, uint64, float16,
// float32, float64, bfloat16, fp8 e4m3, fp8 e5m2).
std::optional<int> nccl_dtype_bytes(int d) {
  static const int sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  if (d < 0 || d >= static_cast<int>(std::size(sizes))) return std::nullopt;
  return sizes[d];
}

struct Line {
  std::string process;  // host:pid
  int dev = 0;
  std::string op;
  std::uint64_t count = 0;
  std::int64_t op_count = -1;  // NCCL's per-communicator operation counter (hex in the log)
  int dtype = 0;
  int root = 0;
  std::string comm;
  int nranks = 0;
  std::string stream;
  std::size_t line_no = 0;
  std::string file;
};

struct CommInit {
  int rank = -1;
  int nranks = 0;
  std::string at;  // "file:line" of the init line
};

// The COLL lines of every file, and the communicators' init lines: (process, comm) -> rank, nranks.
struct LogLines {
  std::vector<Line> lines;
  std::map<std::pair<std::string, std::string>, CommInit> inits;
};

// The longest line the COLL and init patterns are tried on. NCCL's own lines are a few hundred
// characters; std::regex matches recursively, one stack frame per character a \S+ or \w+ takes,
// so one line of tens of thousands of characters (binary junk, a line of another tool) overflows
// the stack. Longer lines are skipped before any regex runs, and counted for a warning.
constexpr std::size_t kMaxLogLine = 4096;

// Lines a warning is about: how many, and the first three to name ("a, b, c, ...").
struct FirstFew {
  long long count = 0;
  std::vector<std::string> shown;
  void add(std::string what) {
    if (++count <= 3) shown.push_back(std::move(what));
  }
  std::string list(std::string_view sep) const {
    return fmt::format("{}{}", fmt::join(shown, sep), count > 3 ? fmt::format("{}...", sep) : "");
  }
};

LogLines read_log_lines(const std::vector<std::string>& files, ImportedTrace& t) {
  static const std::regex coll(
      R"((\S+):(\d+):\d+ \[(\d+)\] NCCL INFO (\w+): opCount (\w+) sendbuff \S+ recvbuff \S+ count (\d+) datatype (\d+) op \d+ root (-?\d+) comm (\S+) \[nranks=(\d+)\] stream (\S+))");
  // "comm 0x.. rank 0 nranks 16 cudaDev 0 ... Init COMPLETE", and since NCCL 2.19 also "comm 0x.. rank 0
  // nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0".
  static const std::regex init(
      R"((\S+):(\d+):\d+ \[(\d+)\] NCCL INFO comm (\S+) rank (-?\d+) n[rR]anks (-?\d+))");
  static const std::regex mnnvl(R"( MNNVL (\d+))");
  LogLines out;
  FirstFew unparsed, too_long;  // for the warnings
  for (const auto& path : files) {
    check_input_file(path, "NCCL log");
    std::ifstream in(path);
    if (!in) throw InputError(fmt::format("{}: cannot read the NCCL log", path));
    std::string text;
    std::size_t no = 0;
    while (std::getline(in, text)) {
      ++no;
      if (text.find("NCCL INFO") == std::string::npos) continue;
      if (text.size() > kMaxLogLine) {
        too_long.add(fmt::format("{}:{}", path, no));
        continue;
      }
      std::smatch m;
      if (std::regex_search(text, m, coll)) {
        Line l;
        l.process = m[1].str() + ":" + m[2].str();
        l.op = m[4];
        try {
          l.dev = std::stoi(m[3]);
          l.op_count = std::stoll(m[5], nullptr, 16);
          l.count = std::stoull(m[6]);
          l.dtype = std::stoi(m[7]);
          l.root = std::stoi(m[8]);
          l.nranks = std::stoi(m[10]);
        } catch (const std::exception&) {
          throw InputError(fmt::format("{}:{}: a number in the COLL line is out of range", path, no));
        }
        l.comm = m[9];
        l.stream = m[11];
        l.line_no = no;
        l.file = path;
        if (l.nranks < 1 || l.nranks > kMaxGpus) {
          throw InputError(
              fmt::format("{}:{}: nranks={} out of range (expected 1..{})", path, no, l.nranks, kMaxGpus));
        }
        // A rooted call's root, or a send/recv's peer, is a rank of the communicator.
        const bool rooted = l.op == "Broadcast" || l.op == "Reduce";
        if ((rooted || l.op == "Send" || l.op == "Recv") && (l.root < 0 || l.root >= l.nranks))
          throw InputError(
              fmt::format("{}:{}: {} {} {} is not a rank of its communicator (nranks={}); expected 0-{}",
                          path, no, l.op, rooted ? "root" : "peer", l.root, l.nranks, l.nranks - 1));
        // count x element size x ranks must not wrap: no call moves 2^50 elements (a mangled line).
        if (l.count > (std::uint64_t{1} << 50))
          throw InputError(fmt::format("{}:{}: count {} is out of range (expected at most 2^50 elements)",
                                       path, no, l.count));
        out.lines.push_back(std::move(l));
      } else if (std::regex_search(text, m, init)) {
        CommInit ci;
        ci.at = fmt::format("{}:{}", path, no);
        try {
          ci.rank = std::stoi(m[5]);
          ci.nranks = std::stoi(m[6]);
        } catch (const std::exception&) {
          throw InputError(
              fmt::format("{}: a number in the init line (comm {} rank {} nranks {}) is out of range", ci.at,
                          m[4].str(), m[5].str(), m[6].str()));
        }
        // The rank numbers the world: a rank outside its communicator would make a world of rank + 1.
        if (ci.nranks < 1 || ci.nranks > kMaxGpus)
          throw InputError(fmt::format("{}: comm {} nranks {} out of range (expected 1..{})", ci.at,
                                       m[4].str(), ci.nranks, kMaxGpus));
        if (ci.rank < 0 || ci.rank >= ci.nranks)
          throw InputError(
              fmt::format("{}: comm {} rank {} is not a rank of its communicator (nranks {}); expected 0-{}",
                          ci.at, m[4].str(), ci.rank, ci.nranks, ci.nranks - 1));
        out.inits[{m[1].str() + ":" + m[2].str() + ":" + m[3].str(), m[4].str()}] = ci;
        if (std::smatch mm; std::regex_search(text, mm, mnnvl))
          t.multi_node_nvlink = t.multi_node_nvlink.value_or(false) || mm[1].str() != "0";
      } else if (text.find("opCount") != std::string::npos) {
        unparsed.add(fmt::format("{}:{}", path, no));
      }
    }
  }
  const std::string long_lines =
      too_long.count == 0 ? ""
                          : fmt::format(
                                "{} NCCL INFO line(s) longer than {} characters (not NCCL's output: a "
                                "corrupt or mixed log) were skipped: {}",
                                too_long.count, kMaxLogLine, too_long.list(", "));
  if (out.lines.empty()) {
    throw InputError(fmt::format(
        "{}: no NCCL COLL lines (\"<Op>: opCount ... count ... datatype ... comm ... [nranks=N]\"); "
        "record the log with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL{}",
        files.front(), long_lines.empty() ? "" : " (" + long_lines + ")"));
  }
  // A communicator's init line and its COLL lines give its size; when they differ one of them is
  // not this communicator's (a mixed or edited log).
  for (const auto& l : out.lines) {
    auto it = out.inits.find({l.process + ":" + std::to_string(l.dev), l.comm});
    if (it != out.inits.end() && it->second.nranks != l.nranks)
      throw InputError(fmt::format("{}:{}: comm {} [nranks={}] contradicts its init line {} (nranks {})",
                                   l.file, l.line_no, l.comm, l.nranks, it->second.at, it->second.nranks));
  }
  if (!long_lines.empty()) t.warnings.push_back(long_lines);
  if (unparsed.count > 0)
    t.warnings.push_back(
        fmt::format("{} line(s) mentioning opCount are not COLL lines this reader can read (a "
                    "malformed count or field, or a line cut by another process's output) and were "
                    "skipped: {}",
                    unparsed.count, unparsed.list(", ")));
  return out;
}

// One rank per (process, device). Its global rank: its rank in the largest communicator whose
// init line it logged; without init lines, the device index when every process drives a
// different one (one node), else the order of first appearance.
struct WorldRanks {
  std::vector<std::string> procs;      // "host:pid:dev", in order of first appearance
  std::map<std::string, int> rank_of;  // proc -> global rank
  int world = 0;
};

WorldRanks world_ranks(const LogLines& log, ImportedTrace& t) {
  WorldRanks w;
  for (const auto& l : log.lines) {
    const std::string key = l.process + ":" + std::to_string(l.dev);
    if (std::find(w.procs.begin(), w.procs.end(), key) == w.procs.end()) w.procs.push_back(key);
    w.world = std::max(w.world, l.nranks);
  }
  std::set<int> devs;
  for (const auto& l : log.lines) devs.insert(l.dev);
  const bool by_device = devs.size() == w.procs.size();
  bool guessed = false;
  for (std::size_t k = 0; k < w.procs.size(); ++k) {
    int best = -1, best_n = 0;
    for (const auto& [pc, ci] : log.inits) {
      if (pc.first == w.procs[k] && ci.nranks > best_n) best = ci.rank, best_n = ci.nranks;
    }
    if (best < 0) {
      best = by_device ? std::stoi(w.procs[k].substr(w.procs[k].rfind(':') + 1)) : static_cast<int>(k);
      guessed = true;
    }
    w.rank_of[w.procs[k]] = best;
  }
  if (guessed) {
    t.warnings.push_back(fmt::format("no \"comm ... rank N nranks M\" init lines for some processes: ranks taken {}",
                                     by_device ? "from the device index [N]" : "in order of appearance"));
  }
  std::set<int> seen;
  for (const auto& [p, r] : w.rank_of) {
    if (!seen.insert(r).second) throw InputError(fmt::format("two processes of the log claim rank {}", r));
    w.world = std::max(w.world, r + 1);
  }
  for (const auto& [p, r] : w.rank_of) t.rank_host[r] = p.substr(0, p.find(':'));  // "host:pid:dev"
  return w;
}

// The collective a COLL line's op name is (none for Send, Recv and ops commstack does not model).
std::optional<Collective> collective_of(const std::string& op) {
  if (op == "AllReduce") return Collective::all_reduce;
  if (op == "AllGather") return Collective::all_gather;
  if (op == "ReduceScatter") return Collective::reduce_scatter;
  if (op == "AllToAll") return Collective::all_to_all;
  if (op == "Broadcast") return Collective::broadcast;
  if (op == "Reduce") return Collective::reduce;
  return std::nullopt;
}

// Communicators: the k-th distinct comm of size n a process uses is the same communicator on
// every process (comm pointers differ per process). Members: every rank when n is the world,
// else the aligned block of n ranks that holds the process's rank (assumption, warned).
void build_ops(const LogLines& log, WorldRanks& w, TraceGraphBuilder& builder, ImportedTrace& t) {
  const int world = w.world;
  std::map<std::string, std::map<std::string, std::pair<int, int>>> comm_index;  // proc -> comm -> (n, k)
  std::map<std::string, std::map<int, int>> per_size;
  std::map<std::string, std::map<std::string, int>> last_on_stream;
  std::map<std::tuple<int, int, int>, std::int64_t> p2p_seq;  // (src, dst, kind) -> next tag
  // (src, dst, tag) -> the Send line and the Recv line matched as one transfer, with their bytes.
  std::map<std::tuple<int, int, std::int64_t>,
           std::pair<std::pair<const Line*, std::uint64_t>, std::pair<const Line*, std::uint64_t>>>
      p2p_pairs;
  bool blocks = false;
  long long kept = 0;
  for (const auto& l : log.lines) {
    const std::string key = l.process + ":" + std::to_string(l.dev);
    const int rank = w.rank_of[key];
    auto& ci = comm_index[key];
    if (!ci.count(l.comm)) ci[l.comm] = {l.nranks, per_size[key][l.nranks]++};
    const auto [n, k] = ci[l.comm];
    std::vector<int> members;
    if (n == world) {
      for (int i = 0; i < world; ++i) members.push_back(i);
    } else {
      blocks = true;
      for (int i = 0; i < n; ++i) members.push_back(rank / n * n + i);
    }
    RankBuilder& rb = builder.rank(rank);
    std::vector<int> deps;
    if (auto it = last_on_stream[key].find(l.stream); it != last_on_stream[key].end()) deps.push_back(it->second);
    const auto elem = nccl_dtype_bytes(l.dtype);
    const std::string name = fmt::format("nccl {} (line {})", l.op, l.line_no);
    int id = -1;
    const std::optional<Collective> c = collective_of(l.op);
    // A COLL line's count is per rank; nccl-tests' size of an all-gather / reduce-scatter is n of them.
    const std::uint64_t mult =
        c == Collective::all_gather || c == Collective::reduce_scatter ? static_cast<std::uint64_t>(n) : 1;
    if (elem && c && n > 1) {
      id = rb.collective(name, 0, 0, 0, deps, *c, l.count * static_cast<std::uint64_t>(*elem) * mult,
                         fmt::format("comm {}x{}", n, k), members, l.op_count);
    } else if (elem && (l.op == "Send" || l.op == "Recv") && l.root >= 0 && l.root < n) {
      const int peer = members[static_cast<std::size_t>(l.root)];
      const bool send = l.op == "Send";
      const int src = send ? rank : peer, dst = send ? peer : rank;
      const std::int64_t tag = p2p_seq[{src, dst, send ? 0 : 1}]++;
      const std::uint64_t bytes = l.count * static_cast<std::uint64_t>(*elem);
      auto& pair = p2p_pairs[{src, dst, tag}];
      (send ? pair.first : pair.second) = {&l, bytes};
      id = rb.p2p(name, 0, 0, 0, deps, send ? OpKind::send : OpKind::recv, peer, tag, bytes);
    } else {
      id = rb.gpu(name, 0, 0, 0, deps, true);
      ++kept;
    }
    last_on_stream[key][l.stream] = id;
  }
  // A Send and the Recv it is matched with (the n-th between the two ranks) that move different
  // sizes: one log cannot say which is right (a mixed or cut log); each keeps its own size.
  FirstFew differ;
  for (const auto& [key, pair] : p2p_pairs) {
    const auto& [send, recv] = pair;
    if (send.first == nullptr || recv.first == nullptr || send.second == recv.second) continue;
    differ.add(fmt::format("{}:{} Send count {} ({} B) and {}:{} Recv count {} ({} B)", send.first->file,
                           send.first->line_no, send.first->count, send.second, recv.first->file,
                           recv.first->line_no, recv.first->count, recv.second));
  }
  if (differ.count > 0)
    t.warnings.push_back(fmt::format(
        "{} Send/Recv pair(s) matched as one transfer move different sizes (a mixed or cut log; each side "
        "keeps its own): {}",
        differ.count, differ.list("; ")));
  if (blocks) {
    t.warnings.push_back("communicators smaller than the world are taken as aligned blocks of consecutive ranks "
                         "(the log does not list their members)");
  }
  if (kept > 0)
    t.warnings.push_back(
        fmt::format("{} operation(s) not modelled (an unknown datatype, a communicator of one rank, a peer "
                    "outside it) take 0 s",
                    kept));
}

}  // namespace

ImportedTrace import_nccl_log(const std::vector<std::string>& files) {
  if (files.empty()) throw InputError("nccl log import: no files");
  ImportedTrace t;
  t.format = "nccl-log";
  t.iteration = "whole log";
  const LogLines log = read_log_lines(files, t);
  WorldRanks w = world_ranks(log, t);
  TraceGraphBuilder builder(w.world);
  build_ops(log, w, builder, t);
  t.graph = builder.finish(t.traced_start_s, t.warnings);
  t.traced_start_s.clear();
  t.source = fmt::format("{} NCCL log file{}, {} ranks, {} operations", files.size(),
                         files.size() == 1 ? "" : "s", w.procs.size(), log.lines.size());
  return t;
}

}  // namespace commstack::workloads::importers
