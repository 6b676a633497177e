#include "calibration/bench/profiler_events.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack::bench::prof {
namespace {

using nlohmann::json;

const char* kind_name(RecordedEvent::Kind k) {
  switch (k) {
    case RecordedEvent::Kind::start: return "start";
    case RecordedEvent::Kind::stop: return "stop";
    case RecordedEvent::Kind::state: return "state";
  }
  return "?";
}

struct Node {
  RecordedEvent start;
  std::optional<double> stop_us;
  std::uint64_t stop_ptimer = 0;     // KernelChStop state's GPU timer
  std::vector<const RecordedEvent*> states;
  std::vector<std::uint64_t> children;
};

bool is_wait(int state) {
  return state == kProxyStepSendGPUWait || state == kProxyStepSendWait || state == kProxyStepRecvWait ||
         state == kProxyStepRecvFlushWait || state == kProxyStepRecvGPUWait || state == kProxyStepSendPeerWait;
}

}  // namespace

json to_json(const RecordedEvent& e) {
  json j{{"k", kind_name(e.kind)}, {"id", e.id}, {"t", e.t_us}};
  if (e.kind == RecordedEvent::Kind::start) {
    j["type"] = e.type;
    if (e.parent) j["parent"] = e.parent;
    if (!e.func.empty()) j["func"] = e.func;
    if (!e.algo.empty()) j["algo"] = e.algo;
    if (!e.proto.empty()) j["proto"] = e.proto;
    if (e.seq) j["seq"] = e.seq;
    if (e.count) j["count"] = e.count;
    if (e.channel >= 0) j["channel"] = e.channel;
    if (e.peer >= 0) j["peer"] = e.peer;
    if (e.n_channels) j["nchannels"] = e.n_channels;
    if (e.is_send) j["send"] = true;
  }
  if (e.kind == RecordedEvent::Kind::state) {
    j["state"] = e.state;
    if (e.trans_size) j["size"] = e.trans_size;
  }
  if (e.ptimer) j["ptimer"] = e.ptimer;
  return j;
}

std::string dump_event_stream(const std::vector<RecordedEvent>& events) {
  std::string out;
  for (const auto& e : events) out += to_json(e).dump() + "\n";
  return out;
}

std::vector<RecordedEvent> parse_event_stream(std::string_view text, const std::string& origin) {
  std::vector<RecordedEvent> out;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto fail = [&](std::string_view what) -> void {
      throw InputError(fmt::format("{}: line {}: {}", origin, line_no, what));
    };
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) fail("expected one JSON object per line");
    auto u64 = [&](const char* key, bool required) -> std::uint64_t {
      auto it = j.find(key);
      if (it == j.end()) {
        if (required) fail(fmt::format("field '{}': expected to be present", key));
        return 0;
      }
      if (!it->is_number_unsigned()) fail(fmt::format("field '{}': expected a non-negative integer", key));
      return it->get<std::uint64_t>();
    };
    auto str = [&](const char* key) -> std::string {
      auto it = j.find(key);
      if (it == j.end()) return "";
      if (!it->is_string()) fail(fmt::format("field '{}': expected a string", key));
      return it->get<std::string>();
    };
    RecordedEvent e;
    const std::string k = str("k");
    if (k == "start") e.kind = RecordedEvent::Kind::start;
    else if (k == "stop") e.kind = RecordedEvent::Kind::stop;
    else if (k == "state") e.kind = RecordedEvent::Kind::state;
    else fail("field 'k': expected \"start\", \"stop\" or \"state\"");
    e.id = u64("id", true);
    if (e.id == 0) fail("field 'id': expected an integer > 0");
    auto t = j.find("t");
    if (t == j.end() || !t->is_number() || !std::isfinite(t->get<double>())) fail("field 't': expected a finite number");
    e.t_us = t->get<double>();
    if (e.kind == RecordedEvent::Kind::start) {
      e.type = u64("type", true);
      if (e.type == 0 || (e.type & (e.type - 1)) != 0) fail("field 'type': expected one event bit (1, 2, 4, ... 2048)");
      e.parent = u64("parent", false);
      e.func = str("func");
      e.algo = str("algo");
      e.proto = str("proto");
      e.seq = u64("seq", false);
      e.count = u64("count", false);
      e.channel = j.contains("channel") ? static_cast<int>(std::min<std::uint64_t>(u64("channel", true), 4096)) : -1;
      e.peer = j.contains("peer") ? static_cast<int>(std::min<std::uint64_t>(u64("peer", true), 1u << 30)) : -1;
      e.n_channels = static_cast<int>(std::min<std::uint64_t>(u64("nchannels", false), 4096));
      if (j.contains("send")) {
        if (!j["send"].is_boolean()) fail("field 'send': expected true or false");
        e.is_send = j["send"].get<bool>();
      }
    }
    if (e.kind == RecordedEvent::Kind::state) {
      auto s = j.find("state");
      if (s == j.end() || !s->is_number_integer()) fail("field 'state': expected an integer");
      const auto v = s->get<std::int64_t>();
      if (v < 0 || v > 1000) fail("field 'state': expected an integer in [0, 1000]");
      e.state = static_cast<int>(v);
      e.trans_size = u64("size", false);
    }
    e.ptimer = u64("ptimer", false);
    out.push_back(std::move(e));
  }
  return out;
}

namespace {

// The events as a tree of nodes by id, and the Coll / P2p roots in start order.
struct EventTree {
  std::map<std::uint64_t, Node> nodes;
  std::vector<std::uint64_t> roots;
};

EventTree event_tree(const std::vector<RecordedEvent>& events, Aggregate& agg) {
  EventTree tree;
  auto& nodes = tree.nodes;
  for (const auto& e : events) {
    switch (e.kind) {
      case RecordedEvent::Kind::start: {
        if (nodes.count(e.id)) {  // an id reused before its stop: count it, keep the first
          ++agg.unmatched_stops;
          break;
        }
        Node& n = nodes[e.id];
        n.start = e;
        if (e.parent) {
          auto p = nodes.find(e.parent);
          if (p != nodes.end()) p->second.children.push_back(e.id);
        }
        if (e.type == kColl || e.type == kP2p) tree.roots.push_back(e.id);
        break;
      }
      case RecordedEvent::Kind::stop: {
        auto it = nodes.find(e.id);
        if (it == nodes.end() || it->second.stop_us) {
          ++agg.unmatched_stops;
          break;
        }
        it->second.stop_us = e.t_us;
        break;
      }
      case RecordedEvent::Kind::state: {
        auto it = nodes.find(e.id);
        if (it == nodes.end() || it->second.stop_us) {
          ++agg.unmatched_stops;
          break;
        }
        it->second.states.push_back(&e);
        if (e.state == kKernelChStop && e.ptimer) it->second.stop_ptimer = e.ptimer;
        break;
      }
    }
  }
  for (const auto& [id, n] : nodes)
    if (!n.stop_us) ++agg.open_events;
  return tree;
}

// A proxy step's bytes and waits: a state lasts until the next state of the same step, or its stop.
void add_proxy_step(const Node& n, double stop_us, CollectiveTimes& t) {
  ++t.proxy_steps;
  for (std::size_t i = 0; i < n.states.size(); ++i) {
    const RecordedEvent& st = *n.states[i];
    t.net_bytes += st.trans_size;
    if (!is_wait(st.state)) continue;
    const double until = i + 1 < n.states.size() ? n.states[i + 1]->t_us : stop_us;
    const double d = std::max(0.0, until - st.t_us);
    if (st.state == kProxyStepSendWait || st.state == kProxyStepRecvWait)
      t.net_wait_us += d;
    else if (st.state == kProxyStepSendPeerWait)
      t.peer_wait_us += d;
    else
      t.gpu_wait_us += d;
  }
}

// One collective (or P2P) call: its descendants' kernel, proxy and network times.
CollectiveTimes collective_times(const std::map<std::uint64_t, Node>& nodes, std::uint64_t root) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const Node& c = nodes.at(root);
  CollectiveTimes t;
  t.id = root;
  t.seq = c.start.seq;
  t.func = c.start.func;
  t.algo = c.start.algo;
  t.proto = c.start.proto;
  t.n_channels = c.start.n_channels;
  t.count = c.start.count;
  t.start_us = c.start.t_us;
  t.enqueue_us = c.stop_us ? *c.stop_us - c.start.t_us : 0;
  double end = c.stop_us.value_or(c.start.t_us);
  double k_first = kInf, k_last = -kInf, p_first = kInf, p_last = -kInf;
  std::map<int, double> channel_us;
  // Depth-first over descendants (Coll -> ProxyOp -> ProxyStep -> NetPlugin, Coll -> KernelCh).
  std::vector<std::uint64_t> stack(c.children.begin(), c.children.end());
  while (!stack.empty()) {
    const std::uint64_t id = stack.back();
    stack.pop_back();
    const Node& n = nodes.at(id);
    stack.insert(stack.end(), n.children.begin(), n.children.end());
    if (!n.stop_us) continue;  // unfinished: no duration to attribute
    const double s = n.start.t_us, e = *n.stop_us;
    end = std::max(end, e);
    if (n.start.type == kKernelCh) {
      k_first = std::min(k_first, s);
      k_last = std::max(k_last, e);
      const double d = (n.start.ptimer && n.stop_ptimer > n.start.ptimer)
                           ? static_cast<double>(n.stop_ptimer - n.start.ptimer) / 1000.0
                           : e - s;
      channel_us[std::max(n.start.channel, 0)] += d;
    } else if (n.start.type == kProxyOp) {
      p_first = std::min(p_first, s);
      p_last = std::max(p_last, e);
    } else if (n.start.type == kProxyStep) {
      add_proxy_step(n, e, t);
    }
  }
  if (k_last >= k_first) t.kernel_us = k_last - k_first;
  if (p_last >= p_first) t.proxy_us = p_last - p_first;
  for (const auto& [ch, us] : channel_us) t.channels.push_back({ch, us});
  t.end_us = end;
  t.total_us = end - t.start_us;
  return t;
}

}  // namespace

Aggregate aggregate(const std::vector<RecordedEvent>& events) {
  Aggregate agg;
  const EventTree tree = event_tree(events, agg);
  for (std::uint64_t root : tree.roots) agg.collectives.push_back(collective_times(tree.nodes, root));
  return agg;
}

}  // namespace commstack::bench::prof
