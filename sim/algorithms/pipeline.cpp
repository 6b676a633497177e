#include "sim/algorithms/pipeline.hpp"

#include "sim/algorithms/link_sharing.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <tuple>
#include <utility>

namespace commstack::sim::detail {

namespace {

// Equal-sized flows on a link under processor sharing leave in the order they came: a link is a
// queue of virtual finish tags with its virtual time advancing at 1 / (flows on it).
// mark > 0: also each channel's end after its first `mark` blocks (the latest arrival of block
// mark-1 over the channel's hops), in *marked.
std::vector<std::vector<double>> run_pipeline(const PipeHops& ph, PipeShape shape, int count, int mark = 0,
                                              std::vector<double>* marked = nullptr) {
  const auto& hops = ph.hops;
  const std::size_t C = hops.size();
  const std::size_t n = hops.front().size();
  const std::size_t F = C * n;
  auto hop_of = [&](std::size_t e) -> const PipeHop& { return hops[e / n][e % n]; };
  std::vector<int> block(F, 0);      // the block this hop sends next (or is sending)
  std::vector<char> busy(F, 0);      // starting or sending
  std::vector<double> sent(F, 0.0);  // when this hop finished sending its last block
  // ring: arrival times of the predecessor's blocks this hop waits for, in order, and how many it
  // used.
  std::vector<std::vector<double>> inbox(F);
  // dag: per hop, for each block from the first not yet started, how many of its feeding hops have
  // delivered it and when the last did; and how many hops feed it.
  std::vector<std::deque<std::pair<int, double>>> gathered(shape == PipeShape::dag ? F : 0);
  std::vector<int> fed_by(shape == PipeShape::dag ? F : 0, 0);
  if (shape == PipeShape::dag)
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t i = 0; i < n; ++i)
        for (const int j : ph.feeds[c][i]) ++fed_by[c * n + static_cast<std::size_t>(j)];
  std::vector<int> used(F, 0);
  std::vector<std::vector<double>> end(C, std::vector<double>(n, 0.0));
  if (marked != nullptr) marked->assign(C, 0.0);

  struct Link {
    int active = 0;
    double vtime = 0, updated = 0;
    std::deque<std::pair<double, std::size_t>> queue;  // (virtual finish tag, hop)
    long version = 0;
  };
  std::vector<Link> L(static_cast<std::size_t>(ph.links));
  // Events: (time, kind, id, version). kind 0: link id's head leaves (if version is current);
  // kind 1: hop id's transfer done on an unshared link; kind 2: hop id starts its next block;
  // kind 3: hop id's block is sent at its current rate (LinkSharing, if version is current).
  using Event = std::tuple<double, int, std::size_t, long>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;

  // Hops that cross several shared links, within the budget of the max-min solves (pipeline.hpp,
  // link_sharing.hpp); beyond it, processor sharing of each hop's busiest link. Rings too: a node
  // crossing relayed over NVLink to the NIC's GPU shares both the NVLink links of the channels'
  // flows inside the node and the NIC, and where the two take about as long (4 DGX H100 nodes, 4-32
  // MiB) processor sharing of the busiest one put the edge level 1.2-1.9% off the step level, max-min
  // on 0.00% (until the twenty-sixth session rings kept processor sharing, their channels being in
  // lock-step at the sizes checked then).
  std::optional<LinkSharing> sharing;
  if (ph.multi_link() &&
      static_cast<double>(F) * count * (static_cast<double>(F) + ph.shared_links) <= ph.max_min_budget)
    sharing.emplace(ph);
  auto schedule = [&](double at, std::size_t e, long version) { events.emplace(at, 3, e, version); };
  auto advance = [](Link& l, double now) {
    if (l.active > 0) l.vtime += (now - l.updated) / l.active;
    l.updated = now;
  };
  auto schedule_head = [&](std::size_t li, double now) {
    Link& l = L[li];
    ++l.version;
    if (l.queue.empty()) return;
    events.emplace(now + (l.queue.front().first - l.vtime) * l.active, 0, li, l.version);
  };
  auto try_start = [&](std::size_t e) {
    if (busy[e] || block[e] >= count) return;
    double at = sent[e];
    if (shape == PipeShape::dag) {
      if (fed_by[e] > 0) {  // a chain's first hop, a tree's leaves wait for nothing
        auto& g = gathered[e];
        if (g.empty() || g.front().first < fed_by[e]) return;
        at = std::max(at, g.front().second);
        g.pop_front();
      }
    } else if (block[e] > 0 && (ph.loop == 0 || block[e] % ph.loop != 0)) {
      // a ring's first step (of each chunk loop) waits for nothing
      if (used[e] == static_cast<int>(inbox[e].size())) return;
      at = std::max(at, inbox[e][static_cast<std::size_t>(used[e]++)]);
    }
    busy[e] = 1;
    events.emplace(at, 2, e, 0);
  };
  auto finish = [&](std::size_t e, double now) {
    const std::size_t c = e / n, i = e % n;
    const PipeHop& h = hops[c][i];
    sent[e] = now;
    busy[e] = 0;
    const int b = block[e]++;
    if (b == count - 1) end[c][i] = now + h.a;
    if (marked != nullptr && b == mark - 1) (*marked)[c] = std::max((*marked)[c], now + h.a);
    // The successors' next block needs this one: a ring's block s feeds step s+1 of the next hop
    // (around the ring), a dag's block k feeds block k of the hops it feeds.
    if (shape == PipeShape::ring && b < count - 1 && (ph.loop == 0 || (b + 1) % ph.loop != 0)) {
      const std::size_t next = c * n + (i + 1) % n;
      inbox[next].push_back(now + h.a);
      try_start(next);
    } else if (shape == PipeShape::dag) {
      for (const int j : ph.feeds[c][i]) {
        const std::size_t next = c * n + static_cast<std::size_t>(j);
        // The successor has started every block before its first gathered one.
        auto& g = gathered[next];
        const auto at = static_cast<std::size_t>(b - block[next] - busy[next]);
        if (g.size() <= at) g.resize(at + 1, {0, 0.0});
        ++g[at].first;
        g[at].second = std::max(g[at].second, now + h.a);
        try_start(next);
      }
    }
    try_start(e);
  };
  std::vector<std::size_t> leaving;
  for (std::size_t e = 0; e < F; ++e) try_start(e);
  double clock = 0;
  while (!events.empty() || (sharing && sharing->changed())) {
    // Shared links change their rates once per instant, after every block that starts or is
    // sent at it.
    if (sharing && sharing->changed() && (events.empty() || std::get<0>(events.top()) > clock)) {
      sharing->reshare(clock, schedule);
      continue;
    }
    const auto [now, kind, id, version] = events.top();
    events.pop();
    clock = now;
    if (kind == 0) {
      Link& l = L[id];
      if (version != l.version) continue;
      advance(l, now);
      const double tag = l.queue.front().first;
      leaving.clear();
      while (!l.queue.empty() &&
             l.queue.front().first - tag <= kSameFinish * hop_of(l.queue.front().second).t0) {
        leaving.push_back(l.queue.front().second);
        l.queue.pop_front();
        --l.active;
      }
      schedule_head(id, now);
      for (const std::size_t e : leaving) finish(e, now);
    } else if (kind == 1) {
      finish(id, now);
    } else if (kind == 3) {
      if (!sharing->current(version)) continue;
      leaving = sharing->leave_due(id, now);
      for (const std::size_t e : leaving) finish(e, now);
    } else if (sharing && !hop_of(id).uses.empty()) {
      sharing->join(id, now);
    } else if (sharing) {
      events.emplace(now + hop_of(id).t_alone, 1, id, 0);
    } else {
      const PipeHop& h = hop_of(id);
      if (h.link < 0) {
        events.emplace(now + h.t0, 1, id, 0);
        continue;
      }
      const auto li = static_cast<std::size_t>(h.link);
      Link& l = L[li];
      advance(l, now);
      l.queue.emplace_back(l.vtime + h.t0, id);
      ++l.active;
      schedule_head(li, now);
    }
  }
  return end;
}

}  // namespace

PipeHops pipeline_hops(const topologies::Topology& topo,
                       const std::vector<std::vector<topologies::Path>>& paths, double block,
                       double overhead_s) {
  std::map<std::pair<int, bool>, int> load;  // (link, forward) -> hops of this collective on it
  for (const auto& channel : paths)
    for (const auto& path : channel)
      for (const auto& h : path) ++load[{h.link, h.forward}];
  std::map<std::pair<int, bool>, int> shared_index;  // busiest links shared by several hops
  std::map<std::pair<int, bool>, int> use_index;     // every link shared by several hops
  PipeHops out;
  out.hops.resize(paths.size());
  out.max_t.assign(paths.size(), 0.0);
  for (std::size_t c = 0; c < paths.size(); ++c) {
    for (const auto& path : paths[c]) {
      PipeHop hop;
      double t = 0;
      std::pair<int, bool> busiest{-1, false};
      for (const auto& h : path) {
        const double bw = topo.link(h.link).bandwidth_Bps;
        if (bw <= 0) continue;
        const int flows = load[{h.link, h.forward}];
        if (flows > 1)
          hop.uses.push_back(
              {use_index.try_emplace({h.link, h.forward}, static_cast<int>(use_index.size())).first->second,
               block / bw});
        else
          hop.t_alone = std::max(hop.t_alone, block / bw);
        if (block * flows / bw > t) {
          t = block * flows / bw;
          hop.t0 = block / bw;
          hop.share = flows;
          busiest = {h.link, h.forward};
        }
      }
      if (hop.share > 1)
        hop.link = shared_index.try_emplace(busiest, static_cast<int>(shared_index.size())).first->second;
      hop.a = topo.path_latency(path) + overhead_s;
      out.max_t[c] = std::max(out.max_t[c], t);
      out.hops[c].push_back(hop);
    }
  }
  out.links = static_cast<int>(shared_index.size());
  out.shared_links = static_cast<int>(use_index.size());
  return out;
}

std::vector<double> pipeline_key(const PipeHops& hops) {
  std::vector<double> key{static_cast<double>(hops.links), static_cast<double>(hops.loop),
                          hops.max_min_budget};
  for (const auto& channel : hops.feeds) {
    key.push_back(-2);  // a dag's structure
    for (const auto& f : channel) {
      key.push_back(-3);
      for (const int j : f) key.push_back(j);
    }
  }
  for (const auto& channel : hops.hops) {
    key.push_back(-1);  // channel separator
    for (const PipeHop& h : channel) {
      key.insert(key.end(), {h.t0, h.share, h.a, static_cast<double>(h.link), h.t_alone,
                             static_cast<double>(h.uses.size())});
      for (const auto& u : h.uses) key.insert(key.end(), {static_cast<double>(u.link), u.t});
    }
  }
  return key;
}

std::vector<std::vector<double>> pipeline_hop_ends(const PipeHops& hops, PipeShape shape, int count) {
  // Sibling groups (the data-parallel rings of a training job, one per tensor-parallel rank) have
  // the same hops and link numbers, so their pipeline is run once.
  static std::map<std::vector<double>, std::vector<std::vector<double>>> cache;
  std::vector<double> key{static_cast<double>(shape), static_cast<double>(count)};
  const std::vector<double> rest = pipeline_key(hops);
  key.insert(key.end(), rest.begin(), rest.end());
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= 64) cache.clear();  // bounded memory; a miss only costs the run
  return cache.emplace(std::move(key), run_pipeline(hops, shape, count)).first->second;
}

std::vector<double> dag_hop_ends_estimate(const PipeHops& hops, std::size_t c, int K) {
  const auto& feeds = hops.feeds[c];
  const std::size_t n = hops.hops[c].size();
  std::vector<double> end(n, 0.0);
  // Longest path to each hop's first block's arrival, in an order where feeders come first.
  std::vector<int> waiting(n, 0);
  for (const auto& f : feeds)
    for (const int j : f) ++waiting[static_cast<std::size_t>(j)];
  std::vector<std::size_t> ready;
  std::vector<double> start(n, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    if (waiting[i] == 0) ready.push_back(i);
  const double slowest = hops.max_t[c];
  while (!ready.empty()) {
    const std::size_t i = ready.back();
    ready.pop_back();
    const PipeHop& h = hops.hops[c][i];
    const double first_arrival = start[i] + h.t0 + h.a;
    end[i] = first_arrival + (K - 1) * slowest;
    for (const int j : feeds[i]) {
      auto& sj = start[static_cast<std::size_t>(j)];
      sj = std::max(sj, first_arrival);
      if (--waiting[static_cast<std::size_t>(j)] == 0) ready.push_back(static_cast<std::size_t>(j));
    }
  }
  return end;
}

PipelineMarks pipeline_channel_ends(const PipeHops& hops, PipeShape shape, int count, int mark) {
  PipelineMarks out;
  const auto ends = run_pipeline(hops, shape, count, mark, &out.at_mark);
  for (const auto& e : ends) out.at_count.push_back(*std::max_element(e.begin(), e.end()));
  return out;
}

}  // namespace commstack::sim::detail
