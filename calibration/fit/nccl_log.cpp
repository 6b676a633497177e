#include "calibration/fit/nccl_log.hpp"

#include <array>
#include <optional>

#include <fmt/format.h>

#include "calibration/fit/text_lines.hpp"
#include "common/error.hpp"
#include "common/input_file.hpp"

namespace commstack::fit {

using namespace detail;

namespace {

constexpr std::array<const char*, 7> kAlgos{"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
constexpr std::array<const char*, 3> kProtos{"ll", "ll128", "simple"};
constexpr std::array<const char*, 5> kFuncs{"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};

// NCCL numbers at most MAXCHANNELS channels per communicator (src/include/device.h).
constexpr int kMaxChannels = 64;

// Thrown inside the line handlers; turned into InputError or a warning by the caller.
struct LineError {
  std::string message;
};
[[noreturn]] void bad(std::string message) { throw LineError{std::move(message)}; }

double num(std::string_view tok, std::string_view field) {
  double v = 0;
  if (!to_double(tok, v)) bad(fmt::format("{}: expected a number, got '{}'", field, printable(tok)));
  return v;
}
std::int64_t integer(std::string_view tok, std::string_view field) {
  std::int64_t v = 0;
  if (!to_int64(tok, v)) bad(fmt::format("{}: expected an integer, got '{}'", field, printable(tok)));
  return v;
}
int small_int(std::string_view tok, std::string_view field) {
  std::int64_t v = integer(tok, field);
  if (v < -1000000000 || v > 1000000000) bad(fmt::format("{}: value out of range", field));
  return static_cast<int>(v);
}
std::uint64_t hex_or_dec(std::string_view tok, std::string_view field) {
  std::uint64_t v = 0;
  int base = 16;  // opCount is printed with %lx
  if (tok.empty()) bad(fmt::format("{}: missing value", field));
  for (char c : tok) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) bad(fmt::format("{}: expected a hexadecimal number, got '{}'", field, printable(tok)));
    if (v > (UINT64_MAX - static_cast<std::uint64_t>(d)) / static_cast<std::uint64_t>(base)) bad(fmt::format("{}: overflow", field));
    v = v * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
  }
  return v;
}

// Token cursor with "expect this word" checks.
struct Cursor {
  std::vector<std::string_view> t;
  std::size_t i = 0;
  std::string_view what;
  std::string_view next(std::string_view field) {
    if (i >= t.size()) bad(fmt::format("{}: '{}' missing (truncated line?)", what, field));
    return t[i++];
  }
  void expect(std::string_view word) {
    std::string_view got = next(word);
    if (got != word) bad(fmt::format("{}: expected '{}', got '{}'", what, word, printable(got)));
  }
};

void parse_tuning_choice(std::string_view msg, int line, NcclLog& log) {
  NcclTuningChoice c;
  c.line = line;
  auto colon = msg.find(':');
  auto bytes_pos = msg.find(" Bytes -> ");
  std::string_view rest = msg;
  if (colon != std::string_view::npos && colon < bytes_pos) {
    c.func = std::string(trim(msg.substr(0, colon)));
    rest = msg.substr(colon + 1);
  }
  Cursor k{split_ws(rest), 0, "TUNING line"};
  std::int64_t bytes = integer(k.next("bytes"), "TUNING bytes");
  if (bytes < 0) bad("TUNING bytes: expected >= 0");
  c.bytes = static_cast<std::uint64_t>(bytes);
  k.expect("Bytes");
  k.expect("->");
  k.expect("Algo");
  std::string_view a = k.next("Algo");
  c.algo = normalize_nccl_algo(a);
  if (c.algo.empty()) bad(fmt::format("TUNING line: unknown algorithm '{}'", printable(a)));
  k.expect("proto");
  std::string_view p = k.next("proto");
  c.proto = normalize_nccl_proto(p);
  if (c.proto.empty()) bad(fmt::format("TUNING line: unknown protocol '{}'", printable(p)));
  std::string_view tail = k.next("channel{Lo..Hi}={a..b} or time");
  if (tail == "time") {
    c.model_time_us = num(k.next("time"), "TUNING time");
  } else {
    constexpr std::string_view pre = "channel{Lo..Hi}={";
    if (tail.substr(0, pre.size()) != pre || tail.back() != '}')
      bad(fmt::format("TUNING line: expected 'channel{{Lo..Hi}}={{a..b}}', got '{}'", printable(tail)));
    std::string_view range = tail.substr(pre.size(), tail.size() - pre.size() - 1);
    auto dots = range.find("..");
    if (dots == std::string_view::npos) bad("TUNING line: channel range without '..'");
    c.channel_lo = small_int(range.substr(0, dots), "TUNING channel lo");
    c.channel_hi = small_int(range.substr(dots + 2), "TUNING channel hi");
    // NCCL numbers at most MAXCHANNELS (64) channels.
    if (*c.channel_lo < 0 || *c.channel_hi < *c.channel_lo || *c.channel_hi > kMaxChannels - 1)
      bad(fmt::format("TUNING line: channel range {{{}..{}}} must satisfy 0 <= lo <= hi <= {}", *c.channel_lo,
                      *c.channel_hi, kMaxChannels - 1));
  }
  if (k.i != k.t.size()) bad(fmt::format("TUNING line: unexpected trailing text '{}'", printable(k.t[k.i])));
  log.choices.push_back(std::move(c));
}

void parse_coll(std::string_view msg, int line, NcclLog& log) {
  NcclCollCall c;
  c.line = line;
  auto colon = msg.find(": opCount ");
  c.func = std::string(trim(msg.substr(0, colon)));
  Cursor k{split_ws(msg.substr(colon + 1)), 0, "COLL line"};
  k.expect("opCount");
  c.op_count = hex_or_dec(k.next("opCount"), "COLL opCount");
  k.expect("sendbuff");
  k.next("sendbuff");
  k.expect("recvbuff");
  k.next("recvbuff");
  k.expect("count");
  std::int64_t count = integer(k.next("count"), "COLL count");
  if (count < 0) bad("COLL count: expected >= 0");
  c.count = static_cast<std::uint64_t>(count);
  k.expect("datatype");
  c.datatype = small_int(k.next("datatype"), "COLL datatype");
  k.expect("op");
  c.op = small_int(k.next("op"), "COLL op");
  k.expect("root");
  c.root = small_int(k.next("root"), "COLL root");
  k.expect("comm");
  k.next("comm");
  if (k.i < k.t.size() && k.t[k.i].substr(0, 8) == "[nranks=") {
    std::string_view n = k.t[k.i++];
    if (n.back() != ']') bad("COLL line: expected '[nranks=N]'");
    c.nranks = small_int(n.substr(8, n.size() - 9), "COLL nranks");
  }
  k.expect("stream");
  k.next("stream");
  log.colls.push_back(std::move(c));
}

void parse_graph(std::string_view msg, int line, NcclLog& log) {
  NcclGraphLine g;
  g.line = line;
  // Commas separate the fields; strip them and walk key/value pairs.
  std::string flat(msg);
  for (char& ch : flat)
    if (ch == ',') ch = ' ';
  Cursor k{split_ws(flat), 0, "GRAPH 'Pattern' line"};
  k.expect("Pattern");
  g.pattern = small_int(k.next("Pattern"), "GRAPH pattern");
  k.expect("crossNic");
  g.cross_nic = small_int(k.next("crossNic"), "GRAPH crossNic");
  k.expect("nChannels");
  g.n_channels = small_int(k.next("nChannels"), "GRAPH nChannels");
  std::string_view key = k.next("bw");
  if (key != "bw" && key != "speed") bad(fmt::format("GRAPH line: expected 'bw' or 'speed', got '{}'", printable(key)));
  std::string_view bw = k.next("bw value");
  auto slash = bw.find('/');
  if (slash == std::string_view::npos) bad("GRAPH line: expected 'bw intra/inter'");
  g.bw_intra_GBps = num(bw.substr(0, slash), "GRAPH bw intra");
  g.bw_inter_GBps = num(bw.substr(slash + 1), "GRAPH bw inter");
  k.expect("type");
  std::string_view ty = k.next("type");
  slash = ty.find('/');
  if (slash == std::string_view::npos) bad("GRAPH line: expected 'type INTRA/INTER'");
  g.type_intra = std::string(ty.substr(0, slash));
  g.type_inter = std::string(ty.substr(slash + 1));
  k.expect("sameChannels");
  g.same_channels = small_int(k.next("sameChannels"), "GRAPH sameChannels");
  if (g.n_channels < 0 || g.bw_intra_GBps < 0 || g.bw_inter_GBps < 0) bad("GRAPH line: negative channels or bandwidth");
  log.graphs.push_back(std::move(g));
}

void parse_channel(std::string_view msg, int line, NcclLog& log) {
  // "Channel 00/16 :    0   7   6 ..."
  Cursor k{split_ws(msg), 0, "Channel line"};
  k.expect("Channel");
  std::string_view id = k.next("NN/MM");
  auto slash = id.find('/');
  if (slash == std::string_view::npos) bad("Channel line: expected 'Channel NN/MM :'");
  NcclRingLine r;
  r.line = line;
  r.channel = small_int(id.substr(0, slash), "Channel number");
  r.n_channels = small_int(id.substr(slash + 1), "Channel count");
  if (r.n_channels < 1 || r.n_channels > kMaxChannels || r.channel < 0 || r.channel >= r.n_channels)
    bad(fmt::format(
        "Channel line: 'Channel {}' is not a channel NCCL prints; expected NN/MM with 1 <= MM <= {} "
        "(MAXCHANNELS) and 0 <= NN < MM",
        printable(id), kMaxChannels));
  k.expect(":");
  while (k.i < k.t.size()) r.ranks.push_back(small_int(k.t[k.i++], "Channel ring rank"));
  if (r.ranks.empty()) bad("Channel line: no ranks after ':' (truncated line?)");
  log.rings.push_back(std::move(r));
}

void parse_ring(std::string_view msg, int line, NcclLog& log) {
  // "Ring 02 : 1 -> 0 -> 7"
  Cursor k{split_ws(msg), 0, "Ring line"};
  k.expect("Ring");
  NcclRingLine r;
  r.line = line;
  r.channel = small_int(k.next("channel"), "Ring channel");
  k.expect(":");
  r.ranks.push_back(small_int(k.next("prev"), "Ring prev"));
  k.expect("->");
  r.ranks.push_back(small_int(k.next("self"), "Ring self"));
  k.expect("->");
  r.ranks.push_back(small_int(k.next("next"), "Ring next"));
  log.rings.push_back(std::move(r));
}

void parse_trees(std::string_view msg, int line, NcclLog& log) {
  // "Trees [0] 1/-1/-1->0->7 [1] ..."
  Cursor k{split_ws(msg), 0, "Trees line"};
  k.expect("Trees");
  NcclTreeLine tl;
  tl.line = line;
  while (k.i < k.t.size()) {
    std::string_view ch = k.next("[channel]");
    if (ch.size() < 3 || ch.front() != '[' || ch.back() != ']') bad(fmt::format("Trees line: expected '[c]', got '{}'", printable(ch)));
    NcclTreeEntry e;
    e.channel = small_int(ch.substr(1, ch.size() - 2), "Trees channel");
    std::string_view spec = k.next("d0/d1/d2->self->up");
    auto a1 = spec.find("->");
    auto a2 = a1 == std::string_view::npos ? a1 : spec.find("->", a1 + 2);
    if (a2 == std::string_view::npos) bad(fmt::format("Trees line: expected 'd0/d1/d2->self->up', got '{}'", printable(spec)));
    std::string_view downs = spec.substr(0, a1);
    for (int d = 0; d < 3; ++d) {
      auto s = downs.find('/');
      if (d < 2 && s == std::string_view::npos) bad("Trees line: expected three '/'-separated children");
      e.down[d] = small_int(d < 2 ? downs.substr(0, s) : downs, "Trees child");
      if (d < 2) downs = downs.substr(s + 1);
    }
    e.self = small_int(spec.substr(a1 + 2, a2 - a1 - 2), "Trees self");
    e.up = small_int(spec.substr(a2 + 2), "Trees parent");
    tl.entries.push_back(e);
  }
  if (tl.entries.empty()) bad("Trees line: no entries (truncated line?)");
  log.trees.push_back(std::move(tl));
}

void parse_comm(std::string_view msg, int line, NcclLog& log) {
  auto t = split_ws(msg);
  NcclCommLine c;
  c.line = line;
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    std::string_view key = t[i];
    if (key == "rank") c.rank = small_int(t[i + 1], "comm rank");
    else if (key == "nRanks" || key == "nranks") c.n_ranks = small_int(t[i + 1], "comm nRanks");
    else if (key == "nNodes") c.n_nodes = small_int(t[i + 1], "comm nNodes");
    else if (key == "localRanks") c.local_ranks = small_int(t[i + 1], "comm localRanks");
    else if (key == "localRank") c.local_rank = small_int(t[i + 1], "comm localRank");
    else if (key == "MNNVL") c.mnnvl = small_int(t[i + 1], "comm MNNVL");
  }
  if (c.n_ranks <= 0 || c.rank < 0 || c.rank >= c.n_ranks) bad("comm line: expected 'rank R nRanks N' with 0 <= R < N");
  if (c.n_nodes && (*c.n_nodes <= 0 || *c.n_nodes > c.n_ranks)) bad("comm line: nNodes must be in 1..nRanks");
  log.comms.push_back(c);
}

// State of the multi-line init tuning table.
struct TableState {
  std::vector<std::string> algos;   // of the current block
  std::vector<std::string> protos;  // of the current block, 3 per algorithm
  int blocks_seen = 0;
  bool header_for_block = false;
};

std::vector<std::string_view> cells(std::string_view msg) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= msg.size()) {
    auto bar = msg.find('|', start);
    std::string_view cell = msg.substr(start, bar == std::string_view::npos ? std::string_view::npos : bar - start);
    out.push_back(trim(cell));
    if (bar == std::string_view::npos) break;
    start = bar + 1;
  }
  while (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

void parse_table_line(std::string_view msg, int line, NcclLog& log, TableState& st) {
  auto c = cells(msg);
  if (c.empty()) return;
  std::string_view head = c[0];
  if (head == "Algorithm") {
    st.algos.clear();
    for (std::size_t i = 1; i < c.size(); ++i) {
      std::string a = normalize_nccl_algo(c[i]);
      if (a.empty()) bad(fmt::format("tuning table: unknown algorithm '{}'", printable(c[i])));
      st.algos.push_back(a);
    }
    st.header_for_block = true;
    st.protos.clear();  // a new block: its Protocol line must follow
    return;
  }
  if (head == "Protocol") {
    if (!st.header_for_block) {
      // Excerpt without the "Algorithm" line: NCCL prints algorithms in blocks of three, in order.
      st.algos.clear();
      for (int a = st.blocks_seen * 3; a < st.blocks_seen * 3 + 3 && a < 7; ++a) st.algos.emplace_back(kAlgos[static_cast<std::size_t>(a)]);
    }
    st.header_for_block = false;
    ++st.blocks_seen;
    st.protos.clear();
    for (std::size_t i = 1; i < c.size(); ++i) {
      std::string p = normalize_nccl_proto(c[i]);
      if (p.empty()) bad(fmt::format("tuning table: unknown protocol '{}'", printable(c[i])));
      st.protos.push_back(p);
    }
    if (st.protos.size() < st.algos.size() * 3) bad("tuning table: fewer protocol columns than 3 per algorithm");
    return;
  }
  if (st.protos.empty() || st.protos.size() < st.algos.size() * 3) bad("tuning table row before its 'Protocol' header");
  if (head == "Max NThreads") {
    if (c.size() - 1 != st.algos.size() * 3) bad("tuning table 'Max NThreads': expected 3 values per algorithm (truncated?)");
    for (std::size_t i = 1; i < c.size(); ++i)
      log.max_nthreads[st.algos[(i - 1) / 3] + "/" + st.protos[i - 1]] = small_int(c[i], "Max NThreads");
    return;
  }
  bool known = false;
  for (const char* f : kFuncs) known = known || head == f;
  if (!known) bad(fmt::format("tuning table: unknown function '{}'", printable(head)));
  if (c.size() - 1 != st.algos.size() * 3)
    bad(fmt::format("tuning table row '{}': expected {} 'lat/bw' cells, got {} (truncated?)", head, st.algos.size() * 3, c.size() - 1));
  std::vector<NcclTuningCell> row;
  for (std::size_t i = 1; i < c.size(); ++i) {
    auto slash = c[i].find('/');
    if (slash == std::string_view::npos) bad(fmt::format("tuning table: expected 'lat/bw', got '{}'", printable(c[i])));
    NcclTuningCell cell;
    cell.line = line;
    cell.func = std::string(head);
    cell.algo = st.algos[(i - 1) / 3];
    cell.proto = st.protos[i - 1];
    cell.latency_us = num(trim(c[i].substr(0, slash)), "tuning table latency");
    cell.bw_GBps = num(trim(c[i].substr(slash + 1)), "tuning table bandwidth");
    row.push_back(cell);
  }
  log.tuning_table.insert(log.tuning_table.end(), row.begin(), row.end());
}

// "16 coll channels, 16 collnet channels, 16 nvls channels, 16 p2p channels, 2 p2p channels per peer"
// (init.cc). A count NCCL cannot print (coll and p2p outside 1-64; nvls and collnet outside 0-64: 0 is
// NCCL without NVLS or CollNet) refuses the whole line, none of its counts kept.
void parse_channel_counts(std::string_view msg, NcclLog& log) {
  const auto t = split_ws(msg);
  std::optional<int> coll, nvls, p2p;
  for (std::size_t i = 0; i + 2 < t.size(); ++i) {
    const std::string_view what = t[i + 1];
    if (t[i + 2].substr(0, 8) != "channels") continue;
    const int v = small_int(t[i], "channel count");
    const int lo = what == "nvls" || what == "collnet" ? 0 : 1;
    if (v < lo || v > kMaxChannels)
      bad(fmt::format(
          "NCCL's channel line: '{} {} channels' is not a channel count NCCL prints; expected {}-{} "
          "(MAXCHANNELS)",
          v, printable(what), lo, kMaxChannels));
    if (what == "coll")
      coll = v;
    else if (what == "nvls")
      nvls = v;
    else if (what == "p2p" && !p2p)
      p2p = v;  // the first: "2 p2p channels per peer" follows
  }
  if (coll) log.coll_channels = coll;
  if (nvls) log.nvls_channels = nvls;
  if (p2p && !log.p2p_channels) log.p2p_channels = p2p;  // the first line's, as every rank prints one
}

bool is_table_line(std::string_view msg) {
  std::string_view t = trim(msg);
  if (t.find('|') == std::string_view::npos) return false;
  auto first = trim(t.substr(0, t.find('|')));
  if (first == "Algorithm" || first == "Protocol" || first == "Max NThreads") return true;
  for (const char* f : kFuncs)
    if (first == f) return t.find('/') != std::string_view::npos;  // not the enabled-matrix rows
  return false;
}

bool starts_with_word_digit(std::string_view msg, std::string_view word) {
  return msg.size() > word.size() && msg.substr(0, word.size()) == word && msg[word.size()] >= '0' && msg[word.size()] <= '9';
}

}  // namespace

std::string normalize_nccl_algo(std::string_view name) {
  std::string n = lower(trim(name));
  std::string squashed;
  for (char c : n)
    if (c != '_') squashed += c;
  if (squashed.size() == 1 && squashed[0] >= '0' && squashed[0] <= '6') return kAlgos[static_cast<std::size_t>(squashed[0] - '0')];
  if (squashed == "tree") return "tree";
  if (squashed == "ring") return "ring";
  if (squashed == "collnetdirect") return "collnet_direct";
  if (squashed == "collnetchain") return "collnet_chain";
  if (squashed == "nvls") return "nvls";
  if (squashed == "nvlstree") return "nvls_tree";
  if (squashed == "pat") return "pat";
  return "";
}

std::string normalize_nccl_proto(std::string_view name) {
  std::string n = lower(trim(name));
  if (n.size() == 1 && n[0] >= '0' && n[0] <= '2') return kProtos[static_cast<std::size_t>(n[0] - '0')];
  if (n == "ll" || n == "ll128" || n == "simple") return n;
  return "";
}

const NcclTuningCell* NcclLog::cell(std::string_view func, std::string_view algo, std::string_view proto) const {
  for (const auto& c : tuning_table)
    if (c.func == func && c.algo == algo && c.proto == proto) return &c;
  return nullptr;
}

NcclLog parse_nccl_log(std::string_view text, const std::string& origin, NcclLogOptions options) {
  NcclLog log;
  log.origin = origin;
  if (trim(text).empty()) throw InputError(fmt::format("{}: empty input, expected an NCCL_DEBUG=INFO log", origin));
  TableState table;
  for (const auto& ln : split_lines(text)) {
    std::string_view raw = ln.text;
    auto info = raw.find("NCCL INFO");
    bool warn = raw.find("NCCL WARN") != std::string_view::npos;
    if (info != std::string_view::npos || warn) ++log.nccl_lines;
    if (auto p = raw.find("NCCL version "); p != std::string_view::npos && !log.nccl_version) {
      auto toks = split_ws(raw.substr(p + 13));
      if (!toks.empty()) {
        std::string_view v = toks[0];
        if (auto plus = v.find('+'); plus != std::string_view::npos) v = v.substr(0, plus);
        bool ok = !v.empty() && v.find('.') != std::string_view::npos;
        for (char c : v) ok = ok && ((c >= '0' && c <= '9') || c == '.');
        if (ok) log.nccl_version = std::string(v);
      }
    }
    if (info == std::string_view::npos) continue;
    std::string_view msg = raw.substr(info + 9);
    if (!msg.empty() && msg.front() == ' ') msg.remove_prefix(1);
    std::string_view tm = trim(msg);
    try {
      if (tm.find(" Bytes -> Algo ") != std::string_view::npos) parse_tuning_choice(tm, ln.number, log);
      else if (tm.find(": opCount ") != std::string_view::npos) parse_coll(tm, ln.number, log);
      else if (tm.substr(0, 8) == "Pattern ") parse_graph(tm, ln.number, log);
      else if (tm.substr(0, 8) == "Channel " && tm.find("->") == std::string_view::npos && tm.find(" via ") == std::string_view::npos &&
               tm.find(" : ") != std::string_view::npos)
        parse_channel(tm, ln.number, log);
      else if (starts_with_word_digit(tm, "Ring ") && tm.find("->") != std::string_view::npos) parse_ring(tm, ln.number, log);
      else if (tm.substr(0, 6) == "Trees ") parse_trees(tm, ln.number, log);
      else if (tm.substr(0, 7) == "comm 0x" && (tm.find(" nRanks ") != std::string_view::npos || tm.find(" nranks ") != std::string_view::npos))
        parse_comm(tm, ln.number, log);
      else if (is_table_line(tm)) parse_table_line(tm, ln.number, log, table);
      else if (auto p = tm.find(" set by environment to "); p != std::string_view::npos) {
        std::string_view var = trim(tm.substr(0, p));
        std::string_view value = trim(tm.substr(p + 23));
        if (!value.empty() && value.back() == '.') value.remove_suffix(1);
        if (!var.empty() && var.find(' ') == std::string_view::npos) log.env[std::string(var)] = std::string(value);
      } else if (tm.find(" coll channels,") != std::string_view::npos) {
        parse_channel_counts(tm, log);
      } else if (tm.find("NVLS multicast support is available") != std::string_view::npos) {
        log.nvls_multicast = true;
      }
    } catch (const LineError& e) {
      if (!options.excerpt) fail(origin, ln.number, e.message);
      log.warnings.push_back(fmt::format("{}:{}: {} (line skipped)", origin, ln.number, e.message));
      if (tm.find(" Bytes -> Algo ") != std::string_view::npos)
        log.tuning_skipped.push_back(fmt::format("{}:{}: {}", origin, ln.number, e.message));
    }
  }
  if (log.nccl_lines == 0)
    throw InputError(fmt::format("{}: no 'NCCL INFO' lines found; expected a log written with NCCL_DEBUG=INFO", origin));
  return log;
}

NcclLog parse_nccl_log_file(const std::string& path, NcclLogOptions options) {
  return parse_nccl_log(read_input_file(path, "NCCL log"), path, options);
}

}  // namespace commstack::fit
