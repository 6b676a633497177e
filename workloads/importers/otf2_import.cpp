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

}  // namespace

ImportedTrace import_otf2(const std::string& path) {
  const Otf2Archive a = read_otf2_archive(path);
  ImportedTrace t;
  t.format = "otf2";
  t.warnings = a.warnings;

  // Ranks: "MPI Rank N" (Score-P) or "GPU rank N" (commstack) when the group says so, otherwise
  // process groups numbered in definition order.
  std::map<std::uint32_t, int> rank_of_group;
  const std::regex numbered(R"((?:MPI Rank|GPU rank) ([0-9]+))");
  int next = 0;
  for (const auto& l : a.locations) {
    if (rank_of_group.count(l.group) != 0) continue;
    std::smatch m;
    rank_of_group[l.group] = std::regex_match(l.group_name, m, numbered) ? std::stoi(m[1].str()) : next;
    ++next;
  }
  std::map<std::uint64_t, int> rank_of_location, lane_of_location;
  std::map<int, int> lanes;
  for (const auto& l : a.locations) {
    const int rank = rank_of_group.at(l.group);
    rank_of_location[l.id] = rank;
    lane_of_location[l.id] = lanes[rank]++;
  }
  int world = 0;
  for (const auto& [g, r] : rank_of_group) world = std::max(world, r + 1);
  TraceGraphBuilder builder(world);
  const auto comm_ranks = [&](std::uint32_t comm) {
    std::vector<int> ranks;
    auto it = a.comms.find(comm);
    if (it == a.comms.end()) return ranks;
    for (std::uint64_t loc : it->second.locations) {
      auto r = rank_of_location.find(loc);
      if (r != rank_of_location.end()) ranks.push_back(r->second);
    }
    return ranks;
  };

  // commstack archives: the message event of each op, by op id (it may sit on another location
  // than its region: a pipeline op on an overlap location `pp #2` has its message on `pp`).
  std::map<std::int64_t, const Otf2Event*> message_of_op;
  for (const auto& e : a.events) {
    const bool message = e.kind == Otf2EventKind::send || e.kind == Otf2EventKind::isend ||
                         e.kind == Otf2EventKind::recv || e.kind == Otf2EventKind::irecv;
    if (message && e.op >= 0) message_of_op.try_emplace(e.op, &e);
  }
  std::map<std::uint64_t, std::vector<Open>> open;  // per location
  std::map<std::uint64_t, int> last_op;             // per location: previous op (lane order)
  std::map<std::tuple<int, int, std::uint32_t, std::uint32_t>, std::int64_t> sent_count, recv_count;
  std::map<int, std::pair<double, double>> span;  // per rank: first and last op time
  long long unpaired = 0, kept = 0, ops = 0, annotated = 0;
  // commstack --otf2 archives: op id -> (rank, local op), and the ops with dependencies to add.
  std::map<std::int64_t, std::pair<int, int>> written_op;
  struct After {
    int rank, op;
    const std::string* ids;
  };
  std::vector<After> after;
  for (const auto& e : a.events) {
    auto& stack = open[e.location];
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
      ++unpaired;
      continue;
    }
    Open o = stack.back();
    stack.pop_back();
    if (o.message == nullptr && o.event != nullptr && o.event->op >= 0) {
      if (const auto it = message_of_op.find(o.event->op); it != message_of_op.end()) o.message = it->second;
    }
    if (o.has_child && o.collective == nullptr && o.message == nullptr) continue;  // an enclosing region
    const int rank = rank_of_location.at(e.location);
    const int lane = lane_of_location.at(e.location);
    const auto* loc = a.location(e.location);
    const auto reg = a.regions.find(o.region);
    const std::string name = reg == a.regions.end() ? fmt::format("region {}", o.region) : reg->second.name;
    const double start = a.seconds(o.enter), dur = a.seconds(e.time - o.enter);
    RankBuilder& rb = builder.rank(rank);
    std::vector<int> deps;
    if (auto it = last_op.find(e.location); it != last_op.end()) deps.push_back(it->second);
    int id = -1;
    if (o.collective != nullptr) {
      const auto& c = *o.collective;
      const auto kind = collective_of(c.collective);
      if (kind) {
        // Back to op_graph.hpp's nccl-tests size: all_gather's is the gathered output (received),
        // the others' the send buffer.
        // Broadcast / reduce: the buffer, which the root only sends (broadcast) or only receives (reduce).
        const bool rooted = *kind == Collective::broadcast || *kind == Collective::reduce;
        const std::uint64_t bytes = *kind == Collective::all_gather ? c.bytes_received
                                    : rooted                        ? std::max(c.bytes, c.bytes_received)
                                                                    : c.bytes;
        const auto it = a.comms.find(c.comm);
        const std::string label = it == a.comms.end() ? fmt::format("comm {}", c.comm) : it->second.name;
        auto members = comm_ranks(c.comm);
        std::sort(members.begin(), members.end());
        id = rb.collective(name, start, dur, lane, deps, *kind, bytes, label, members);
      } else {
        ++kept;
        id = rb.gpu(name, start, dur, lane, deps, true);
      }
    } else if (o.message != nullptr) {
      const auto& m = *o.message;
      const auto members = comm_ranks(m.comm);
      if (m.peer >= members.size()) {
        ++kept;
        id = rb.gpu(name, start, dur, lane, deps, true);
      } else {
        const int peer = members[m.peer];
        const bool send = m.kind == Otf2EventKind::send || m.kind == Otf2EventKind::isend;
        // MPI does not overtake messages of one (sender, receiver, communicator, tag): the n-th
        // send matches the n-th receive, which makes the op graph's tag unique.
        auto& count = send ? sent_count[{rank, peer, m.comm, m.tag}] : recv_count[{peer, rank, m.comm, m.tag}];
        const std::int64_t tag = (static_cast<std::int64_t>(m.comm) << 48) ^ (static_cast<std::int64_t>(m.tag) << 24) ^ count++;
        id = rb.p2p(name, start, dur, lane, deps, send ? OpKind::send : OpKind::recv, peer, tag, m.bytes);
      }
    } else {
      const bool gpu = (loc != nullptr && loc->type == "accelerator_stream") ||
                       (reg != a.regions.end() && reg->second.paradigm == "cuda");
      id = gpu ? rb.gpu(name, start, dur, lane, deps, false)
               : rb.host(name, start, dur, lane, deps.empty() ? -1 : deps.front());
    }
    last_op[e.location] = id;
    if (const auto ph = o.event != nullptr ? phase_of(o.event->phase) : std::nullopt) {
      rb.annotate(id, o.event->micro_batch, o.event->layer, *ph);
      ++annotated;
    }
    if (o.event != nullptr && o.event->op >= 0) {
      written_op[o.event->op] = {rank, id};
      if (!o.event->after.empty()) after.push_back({rank, id, &o.event->after});
    }
    ++ops;
    auto [it, added] = span.try_emplace(rank, start, start + dur);
    if (!added) it->second = {std::min(it->second.first, start), std::max(it->second.second, start + dur)};
  }
  if (ops == 0) throw InputError(fmt::format("{}: the trace has no region (Enter/Leave) events to replay", a.anchor));
  // Dependencies across a rank's locations, as commstack wrote them (a compute op after the TP
  // all-reduce it consumes, a pipeline send after the forward pass it ships): without them each
  // location would be an independent chain and communication would hide behind compute.
  long long cross_deps = 0, dropped_deps = 0;
  for (const auto& x : after) {
    for (std::int64_t dep : parse_ids(*x.ids)) {
      const auto it = written_op.find(dep);
      if (it == written_op.end() || it->second.first != x.rank || it->second.second == x.op) {
        ++dropped_deps;
        continue;
      }
      builder.rank(x.rank).add_dep(x.op, it->second.second);
      ++cross_deps;
    }
  }
  if (!written_op.empty()) {
    t.warnings.push_back(fmt::format("commstack archive: {} op dependencies restored from the commstack_after attributes{}",
                                     cross_deps,
                                     dropped_deps > 0 ? fmt::format(" ({} naming ops not in the trace skipped)", dropped_deps)
                                                      : std::string()));
  }
  long long still_open = 0;
  for (const auto& [loc, stack] : open) still_open += static_cast<long long>(stack.size());
  if (unpaired > 0) t.warnings.push_back(fmt::format("{} Leave event(s) without their Enter were skipped", unpaired));
  if (still_open > 0) t.warnings.push_back(fmt::format("{} region(s) never left (truncated trace?) were skipped", still_open));
  if (kept > 0) {
    t.warnings.push_back(fmt::format("{} communication op(s) of kinds not re-simulated (barrier, broadcast, gather, ...) keep "
                                     "their traced duration",
                                     kept));
  }
  t.warnings.push_back("OTF2 has no iteration markers: the whole trace is replayed as one iteration");
  t.graph = builder.finish(t.traced_start_s, t.warnings);
  t.steps_known = annotated == ops;
  for (const auto& [rank, s] : span) {
    t.traced_iteration_s[rank] = s.second - s.first;
    t.traced_s = std::max(t.traced_s, s.second - s.first);
  }
  t.source = fmt::format("{} ({} locations, {} ranks, {} ops)", a.anchor, a.locations.size(), span.size(), ops);
  return t;
}

}  // namespace commstack::workloads::importers
