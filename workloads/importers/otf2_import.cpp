#include "workloads/importers/otf2_import.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/units.hpp"
#include "workloads/importers/otf2_reader.hpp"
#include "workloads/importers/trace_graph.hpp"

namespace commstack::workloads::importers {
namespace {

std::optional<Collective> collective_of(const std::string& kind) {
  if (kind == "all_reduce") return Collective::all_reduce;
  if (kind == "all_gather") return Collective::all_gather;
  if (kind == "reduce_scatter") return Collective::reduce_scatter;
  if (kind == "all_to_all") return Collective::all_to_all;
  if (kind == "broadcast") return Collective::broadcast;
  if (kind == "reduce") return Collective::reduce;
  return std::nullopt;
}

std::optional<Phase> phase_of(const std::string& name) {
  if (name == "forward") return Phase::forward;
  if (name == "backward") return Phase::backward;
  if (name == "recompute") return Phase::recompute;
  if (name == "optimizer") return Phase::optimizer;
  return std::nullopt;
}

// What happened inside one open region.
struct Open {
  std::uint32_t region = 0;
  std::uint64_t enter = 0;
  bool has_child = false;
  const Otf2Event* collective = nullptr;
  const Otf2Event* message = nullptr;
  const Otf2Event* event = nullptr;  // the Enter (commstack's op id and dependencies)
};

// "12,15,40" -> {12, 15, 40}; a malformed entry ends the list (the rest is not trusted).
std::vector<std::int64_t> parse_ids(const std::string& text) {
  std::vector<std::int64_t> ids;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    std::int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data() + pos, text.data() + end, v);
    if (ec != std::errc() || ptr != text.data() + end || v < 0) break;
    ids.push_back(v);
    pos = end + 1;
  }
  return ids;
}

// An OTF2 archive's region events as ops of the trace graph: one rank per location group, one lane
// per location, an op per innermost region (or per region that holds a collective or message).
class Otf2Import {
 public:
  explicit Otf2Import(const Otf2Archive& a) : a_(a), builder_(locate_ranks()) { index_messages(); }

  void read_events();
  // Dependencies across a rank's locations, as commstack wrote them (commstack_after).
  void restore_dependencies(std::vector<std::string>& warnings);
  void finish(ImportedTrace& t);

 private:
  int locate_ranks();
  void index_messages();
  std::vector<int> comm_ranks(std::uint32_t comm) const;
  void add_op(const Otf2Event& leave, const Open& o);
  int collective_op(const Otf2Event& c, RankBuilder& rb, const std::string& name, double start, double dur,
                    int lane, const std::vector<int>& deps);
  int message_op(const Otf2Event& m, int rank, RankBuilder& rb, const std::string& name, double start,
                 double dur, int lane, const std::vector<int>& deps);

  struct After {
    int rank, op;
    const std::string* ids;
  };

  const Otf2Archive& a_;
  std::map<std::uint64_t, int> rank_of_location_, lane_of_location_;
  TraceGraphBuilder builder_;
  // commstack archives: the message event of each op, by op id (it may sit on another location
  // than its region: a pipeline op on an overlap location `pp #2` has its message on `pp`).
  std::map<std::int64_t, const Otf2Event*> message_of_op_;
  std::map<std::uint64_t, std::vector<Open>> open_;  // per location
  std::map<std::uint64_t, int> last_op_;             // per location: previous op (lane order)
  std::map<std::tuple<int, int, std::uint32_t, std::uint32_t>, std::int64_t> sent_count_, recv_count_;
  std::map<int, std::pair<double, double>> span_;  // per rank: first and last op time
  long long unpaired_ = 0, kept_ = 0, ops_ = 0, annotated_ = 0;
  // commstack --otf2 archives: op id -> (rank, local op), and the ops with dependencies to add.
  std::map<std::int64_t, std::pair<int, int>> written_op_;
  std::vector<After> after_;
};

// Ranks: "MPI Rank N" (Score-P) or "GPU rank N" (commstack) when the group says so, otherwise
// process groups numbered in definition order. Returns the world size.
int Otf2Import::locate_ranks() {
  std::map<std::uint32_t, int> rank_of_group;
  const std::regex numbered(R"((?:MPI Rank|GPU rank) ([0-9]+))");
  int next = 0;
  for (const auto& l : a_.locations) {
    if (rank_of_group.count(l.group) != 0) continue;
    std::smatch m;
    int rank = next;
    // std::regex recurses once per digit matched: a name of thousands of digits from a corrupt
    // archive would overflow the stack, and no "MPI Rank N" is longer than a few dozen characters.
    if (l.group_name.size() <= 64 && std::regex_match(l.group_name, m, numbered)) {
      // A rank number from the file: bounded like NCCL's nranks, so that a corrupt name neither
      // overflows nor sizes the world at billions of ranks.
      rank = m[1].length() > 8 ? static_cast<int>(kMaxGpus) : std::stoi(m[1].str());
      if (rank >= kMaxGpus)
        throw InputError(fmt::format("{}: location group '{}': rank {} out of range (expected < {})",
                                     a_.anchor, l.group_name, m[1].str(), kMaxGpus));
    }
    rank_of_group[l.group] = rank;
    ++next;
  }
  std::map<int, int> lanes;
  for (const auto& l : a_.locations) {
    const int rank = rank_of_group.at(l.group);
    rank_of_location_[l.id] = rank;
    lane_of_location_[l.id] = lanes[rank]++;
  }
  int world = 0;
  for (const auto& [g, r] : rank_of_group) world = std::max(world, r + 1);
  return world;
}

void Otf2Import::index_messages() {
  for (const auto& e : a_.events) {
    const bool message = e.kind == Otf2EventKind::send || e.kind == Otf2EventKind::isend ||
                         e.kind == Otf2EventKind::recv || e.kind == Otf2EventKind::irecv;
    if (message && e.op >= 0) message_of_op_.try_emplace(e.op, &e);
  }
}

std::vector<int> Otf2Import::comm_ranks(std::uint32_t comm) const {
  std::vector<int> ranks;
  auto it = a_.comms.find(comm);
  if (it == a_.comms.end()) return ranks;
  for (std::uint64_t loc : it->second.locations) {
    auto r = rank_of_location_.find(loc);
    if (r != rank_of_location_.end()) ranks.push_back(r->second);
  }
  return ranks;
}

void Otf2Import::read_events() {
  for (const auto& e : a_.events) {
    auto& stack = open_[e.location];
    switch (e.kind) {
      case Otf2EventKind::enter:
        if (!stack.empty()) stack.back().has_child = true;
        stack.push_back({e.region, e.time, false, nullptr, nullptr, &e});
        continue;
      case Otf2EventKind::collective_end:
        if (!stack.empty()) stack.back().collective = &e;
        continue;
      case Otf2EventKind::send:
      case Otf2EventKind::isend:
      case Otf2EventKind::recv:
      case Otf2EventKind::irecv:
        if (e.op >= 0) continue;  // attached to its op's region by id, below
        if (!stack.empty() && stack.back().message == nullptr) stack.back().message = &e;
        continue;
      case Otf2EventKind::leave: break;
      default: continue;
    }
    if (stack.empty() || stack.back().region != e.region) {
      ++unpaired_;
      continue;
    }
    Open o = stack.back();
    stack.pop_back();
    if (o.message == nullptr && o.event != nullptr && o.event->op >= 0) {
      if (const auto it = message_of_op_.find(o.event->op); it != message_of_op_.end())
        o.message = it->second;
    }
    if (o.has_child && o.collective == nullptr && o.message == nullptr) continue;  // an enclosing region
    add_op(e, o);
  }
  if (ops_ == 0)
    throw InputError(fmt::format("{}: the trace has no region (Enter/Leave) events to replay", a_.anchor));
}

int Otf2Import::collective_op(const Otf2Event& c, RankBuilder& rb, const std::string& name, double start,
                              double dur, int lane, const std::vector<int>& deps) {
  const auto kind = collective_of(c.collective);
  if (!kind) {
    ++kept_;
    return rb.gpu(name, start, dur, lane, deps, true);
  }
  // Back to op_graph.hpp's nccl-tests size: all_gather's is the gathered output (received),
  // the others' the send buffer.
  // Broadcast / reduce: the buffer, which the root only sends (broadcast) or only receives (reduce).
  const bool rooted = *kind == Collective::broadcast || *kind == Collective::reduce;
  const std::uint64_t bytes = *kind == Collective::all_gather ? c.bytes_received
                              : rooted                        ? std::max(c.bytes, c.bytes_received)
                                                              : c.bytes;
  const auto it = a_.comms.find(c.comm);
  const std::string label = it == a_.comms.end() ? fmt::format("comm {}", c.comm) : it->second.name;
  auto members = comm_ranks(c.comm);
  std::sort(members.begin(), members.end());
  return rb.collective(name, start, dur, lane, deps, *kind, bytes, label, members);
}

int Otf2Import::message_op(const Otf2Event& m, int rank, RankBuilder& rb, const std::string& name,
                           double start, double dur, int lane, const std::vector<int>& deps) {
  const auto members = comm_ranks(m.comm);
  if (m.peer >= members.size()) {
    ++kept_;
    return rb.gpu(name, start, dur, lane, deps, true);
  }
  const int peer = members[m.peer];
  const bool send = m.kind == Otf2EventKind::send || m.kind == Otf2EventKind::isend;
  // MPI does not overtake messages of one (sender, receiver, communicator, tag): the n-th
  // send matches the n-th receive, which makes the op graph's tag unique.
  auto& count = send ? sent_count_[{rank, peer, m.comm, m.tag}] : recv_count_[{peer, rank, m.comm, m.tag}];
  const std::int64_t tag =
      (static_cast<std::int64_t>(m.comm) << 48) ^ (static_cast<std::int64_t>(m.tag) << 24) ^ count++;
  return rb.p2p(name, start, dur, lane, deps, send ? OpKind::send : OpKind::recv, peer, tag, m.bytes);
}

// The op of a region that was left: a collective, a message, or GPU / host work.
void Otf2Import::add_op(const Otf2Event& e, const Open& o) {
  const int rank = rank_of_location_.at(e.location);
  const int lane = lane_of_location_.at(e.location);
  const auto* loc = a_.location(e.location);
  const auto reg = a_.regions.find(o.region);
  const std::string name = reg == a_.regions.end() ? fmt::format("region {}", o.region) : reg->second.name;
  const double start = a_.seconds(o.enter), dur = a_.seconds(e.time - o.enter);
  RankBuilder& rb = builder_.rank(rank);
  std::vector<int> deps;
  if (auto it = last_op_.find(e.location); it != last_op_.end()) deps.push_back(it->second);
  int id = -1;
  if (o.collective != nullptr) {
    id = collective_op(*o.collective, rb, name, start, dur, lane, deps);
  } else if (o.message != nullptr) {
    id = message_op(*o.message, rank, rb, name, start, dur, lane, deps);
  } else {
    const bool gpu = (loc != nullptr && loc->type == "accelerator_stream") ||
                     (reg != a_.regions.end() && reg->second.paradigm == "cuda");
    id = gpu ? rb.gpu(name, start, dur, lane, deps, false)
             : rb.host(name, start, dur, lane, deps.empty() ? -1 : deps.front());
  }
  last_op_[e.location] = id;
  if (const auto ph = o.event != nullptr ? phase_of(o.event->phase) : std::nullopt) {
    rb.annotate(id, o.event->micro_batch, o.event->layer, *ph);
    ++annotated_;
  }
  if (o.event != nullptr && o.event->op >= 0) {
    written_op_[o.event->op] = {rank, id};
    if (!o.event->after.empty()) after_.push_back({rank, id, &o.event->after});
  }
  ++ops_;
  auto [it, added] = span_.try_emplace(rank, start, start + dur);
  if (!added) it->second = {std::min(it->second.first, start), std::max(it->second.second, start + dur)};
}

// Without them each location would be an independent chain and communication would hide behind
// compute (a compute op after the TP all-reduce it consumes, a pipeline send after the forward
// pass it ships).
void Otf2Import::restore_dependencies(std::vector<std::string>& warnings) {
  long long cross_deps = 0, dropped_deps = 0;
  for (const auto& x : after_) {
    for (std::int64_t dep : parse_ids(*x.ids)) {
      const auto it = written_op_.find(dep);
      if (it == written_op_.end() || it->second.first != x.rank || it->second.second == x.op) {
        ++dropped_deps;
        continue;
      }
      builder_.rank(x.rank).add_dep(x.op, it->second.second);
      ++cross_deps;
    }
  }
  if (!written_op_.empty()) {
    warnings.push_back(fmt::format(
        "commstack archive: {} op dependencies restored from the commstack_after attributes{}", cross_deps,
        dropped_deps > 0 ? fmt::format(" ({} naming ops not in the trace skipped)", dropped_deps)
                         : std::string()));
  }
}

void Otf2Import::finish(ImportedTrace& t) {
  long long still_open = 0;
  for (const auto& [loc, stack] : open_) still_open += static_cast<long long>(stack.size());
  if (unpaired_ > 0)
    t.warnings.push_back(fmt::format("{} Leave event(s) without their Enter were skipped", unpaired_));
  if (still_open > 0) t.warnings.push_back(fmt::format("{} region(s) never left (truncated trace?) were skipped", still_open));
  if (kept_ > 0) {
    t.warnings.push_back(
        fmt::format("{} communication op(s) of kinds not re-simulated (barrier, broadcast, gather, ...) keep "
                    "their traced duration",
                    kept_));
  }
  t.warnings.push_back("OTF2 has no iteration markers: the whole trace is replayed as one iteration");
  t.graph = builder_.finish(t.traced_start_s, t.warnings);
  t.steps_known = annotated_ == ops_;
  for (const auto& [rank, s] : span_) {
    t.traced_iteration_s[rank] = s.second - s.first;
    t.traced_s = std::max(t.traced_s, s.second - s.first);
  }
  t.source =
      fmt::format("{} ({} locations, {} ranks, {} ops)", a_.anchor, a_.locations.size(), span_.size(), ops_);
}

}  // namespace

ImportedTrace import_otf2(const std::string& path) {
  return import_otf2_archive(read_otf2_archive(path));
}

ImportedTrace import_otf2_archive(const Otf2Archive& a) {
  ImportedTrace t;
  t.format = "otf2";
  t.warnings = a.warnings;
  Otf2Import imp(a);
  imp.read_events();
  imp.restore_dependencies(t.warnings);
  imp.finish(t);
  return t;
}

}  // namespace commstack::workloads::importers
