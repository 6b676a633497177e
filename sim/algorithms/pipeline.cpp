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
class PipelineRun {
 public:
  // mark > 0: also each channel's end after its first `mark` blocks (the latest arrival of block
  // mark-1 over the channel's hops), in *marked.
  PipelineRun(const PipeHops& ph, PipeShape shape, int count, int mark, std::vector<double>* marked);
  std::vector<std::vector<double>> run();

 private:
  struct Link {
    int active = 0;
    double vtime = 0, updated = 0;
    std::deque<std::pair<double, std::size_t>> queue;  // (virtual finish tag, hop)
    long version = 0;
  };
  // Events: (time, kind, id, version). kind 0: link id's head leaves (if version is current);
  // kind 1: hop id's transfer done on an unshared link; kind 2: hop id starts its next block;
  // kind 3: hop id's block is sent at its current rate (LinkSharing, if version is current).
  using Event = std::tuple<double, int, std::size_t, long>;

  const PipeHop& hop_of(std::size_t e) const { return ph_.hops[e / n_][e % n_]; }
  static void advance(Link& l, double now) {
    if (l.active > 0) l.vtime += (now - l.updated) / l.active;
    l.updated = now;
  }
  void schedule_head(std::size_t li, double now);
  void try_start(std::size_t e);
  void finish(std::size_t e, double now);
  void head_leaves(std::size_t li, long version, double now);
  void start_block(std::size_t e, double now);

  const PipeHops& ph_;
  const PipeShape shape_;
  const int count_, mark_;
  std::vector<double>* marked_;
  const std::size_t C_, n_, F_;
  std::vector<int> block_;    // the block this hop sends next (or is sending)
  std::vector<char> busy_;    // starting or sending
  std::vector<double> sent_;  // when this hop finished sending its last block
  // ring: arrival times of the predecessor's blocks this hop waits for, in order, and how many it
  // used.
  std::vector<std::vector<double>> inbox_;
  std::vector<int> used_;
  // dag: per hop, for each block from the first not yet started, how many of its feeding hops have
  // delivered it and when the last did; and how many hops feed it.
  std::vector<std::deque<std::pair<int, double>>> gathered_;
  std::vector<int> fed_by_;
  std::vector<std::vector<double>> end_;
  std::vector<Link> links_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::optional<LinkSharing> sharing_;
  std::vector<std::size_t> leaving_;
};

PipelineRun::PipelineRun(const PipeHops& ph, PipeShape shape, int count, int mark,
                         std::vector<double>* marked)
    : ph_(ph),
      shape_(shape),
      count_(count),
      mark_(mark),
      marked_(marked),
      C_(ph.hops.size()),
      n_(ph.hops.front().size()),
      F_(C_ * n_),
      block_(F_, 0),
      busy_(F_, 0),
      sent_(F_, 0.0),
      inbox_(F_),
      used_(F_, 0),
      gathered_(shape == PipeShape::dag ? F_ : 0),
      fed_by_(shape == PipeShape::dag ? F_ : 0, 0),
      end_(C_, std::vector<double>(n_, 0.0)),
      links_(static_cast<std::size_t>(ph.links)) {
  if (shape_ == PipeShape::dag)
    for (std::size_t c = 0; c < C_; ++c)
      for (std::size_t i = 0; i < n_; ++i)
        for (const int j : ph.feeds[c][i]) ++fed_by_[c * n_ + static_cast<std::size_t>(j)];
  if (marked_ != nullptr) marked_->assign(C_, 0.0);
  // Hops that cross several shared links, within the budget of the max-min solves (pipeline.hpp,
  // link_sharing.hpp); beyond it, processor sharing of each hop's busiest link. Rings too: a node
  // crossing relayed over NVLink to the NIC's GPU shares both the NVLink links of the channels'
  // flows inside the node and the NIC, and where the two take about as long (4 DGX H100 nodes, 4-32
  // MiB) processor sharing of the busiest one put the edge level 1.2-1.9% off the step level, max-min
  // on 0.00% (until the twenty-sixth session rings kept processor sharing, their channels being in
  // lock-step at the sizes checked then).
  if (ph.multi_link() &&
      static_cast<double>(F_) * count * (static_cast<double>(F_) + ph.shared_links) <= ph.max_min_budget)
    sharing_.emplace(ph);
}

void PipelineRun::schedule_head(std::size_t li, double now) {
  Link& l = links_[li];
  ++l.version;
  if (l.queue.empty()) return;
  events_.emplace(now + (l.queue.front().first - l.vtime) * l.active, 0, li, l.version);
}

void PipelineRun::try_start(std::size_t e) {
  if (busy_[e] || block_[e] >= count_) return;
  double at = sent_[e];
  if (shape_ == PipeShape::dag) {
    if (fed_by_[e] > 0) {  // a chain's first hop, a tree's leaves wait for nothing
      auto& g = gathered_[e];
      if (g.empty() || g.front().first < fed_by_[e]) return;
      at = std::max(at, g.front().second);
      g.pop_front();
    }
  } else if (block_[e] > 0 && (ph_.loop == 0 || block_[e] % ph_.loop != 0)) {
    // a ring's first step (of each chunk loop) waits for nothing
    if (used_[e] == static_cast<int>(inbox_[e].size())) return;
    at = std::max(at, inbox_[e][static_cast<std::size_t>(used_[e]++)]);
  }
  busy_[e] = 1;
  events_.emplace(at, 2, e, 0);
}

void PipelineRun::finish(std::size_t e, double now) {
  const std::size_t c = e / n_, i = e % n_;
  const PipeHop& h = ph_.hops[c][i];
  sent_[e] = now;
  busy_[e] = 0;
  const int b = block_[e]++;
  if (b == count_ - 1) end_[c][i] = now + h.a;
  if (marked_ != nullptr && b == mark_ - 1) (*marked_)[c] = std::max((*marked_)[c], now + h.a);
  // The successors' next block needs this one: a ring's block s feeds step s+1 of the next hop
  // (around the ring), a dag's block k feeds block k of the hops it feeds.
  if (shape_ == PipeShape::ring && b < count_ - 1 && (ph_.loop == 0 || (b + 1) % ph_.loop != 0)) {
    const std::size_t next = c * n_ + (i + 1) % n_;
    inbox_[next].push_back(now + h.a);
    try_start(next);
  } else if (shape_ == PipeShape::dag) {
    for (const int j : ph_.feeds[c][i]) {
      const std::size_t next = c * n_ + static_cast<std::size_t>(j);
      // The successor has started every block before its first gathered one.
      auto& g = gathered_[next];
      const auto at = static_cast<std::size_t>(b - block_[next] - busy_[next]);
      if (g.size() <= at) g.resize(at + 1, {0, 0.0});
      ++g[at].first;
      g[at].second = std::max(g[at].second, now + h.a);
      try_start(next);
    }
  }
  try_start(e);
}

// The head of link li's queue leaves, with every flow whose tag is the same within kSameFinish.
void PipelineRun::head_leaves(std::size_t li, long version, double now) {
  Link& l = links_[li];
  if (version != l.version) return;
  advance(l, now);
  const double tag = l.queue.front().first;
  leaving_.clear();
  while (!l.queue.empty() && l.queue.front().first - tag <= kSameFinish * hop_of(l.queue.front().second).t0) {
    leaving_.push_back(l.queue.front().second);
    l.queue.pop_front();
    --l.active;
  }
  schedule_head(li, now);
  for (const std::size_t e : leaving_) finish(e, now);
}

// Hop e starts its next block: on shared links (max-min), alone, or into its link's queue.
void PipelineRun::start_block(std::size_t e, double now) {
  if (sharing_ && !hop_of(e).uses.empty()) {
    sharing_->join(e, now);
    return;
  }
  if (sharing_) {
    events_.emplace(now + hop_of(e).t_alone, 1, e, 0);
    return;
  }
  const PipeHop& h = hop_of(e);
  if (h.link < 0) {
    events_.emplace(now + h.t0, 1, e, 0);
    return;
  }
  const auto li = static_cast<std::size_t>(h.link);
  Link& l = links_[li];
  advance(l, now);
  l.queue.emplace_back(l.vtime + h.t0, e);
  ++l.active;
  schedule_head(li, now);
}

std::vector<std::vector<double>> PipelineRun::run() {
  const auto schedule = [&](double at, std::size_t e, long version) { events_.emplace(at, 3, e, version); };
  for (std::size_t e = 0; e < F_; ++e) try_start(e);
  double clock = 0;
  while (!events_.empty() || (sharing_ && sharing_->changed())) {
    // Shared links change their rates once per instant, after every block that starts or is
    // sent at it.
    if (sharing_ && sharing_->changed() && (events_.empty() || std::get<0>(events_.top()) > clock)) {
      sharing_->reshare(clock, schedule);
      continue;
    }
    const auto [now, kind, id, version] = events_.top();
    events_.pop();
    clock = now;
    if (kind == 0) {
      head_leaves(id, version, now);
    } else if (kind == 1) {
      finish(id, now);
    } else if (kind == 3) {
      if (!sharing_->current(version)) continue;
      leaving_ = sharing_->leave_due(id, now);
      for (const std::size_t e : leaving_) finish(e, now);
    } else {
      start_block(id, now);
    }
  }
  return std::move(end_);  // run() is called once per PipelineRun
}

std::vector<std::vector<double>> run_pipeline(const PipeHops& ph, PipeShape shape, int count, int mark = 0,
                                              std::vector<double>* marked = nullptr) {
  return PipelineRun(ph, shape, count, mark, marked).run();
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
