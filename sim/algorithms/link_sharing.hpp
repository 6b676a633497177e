#pragma once
// Internal to sim/algorithms: how a chain's or tree's pipeline blocks in flight share links that
// several of them cross, when a hop crosses two or more such links with different flows on each (a
// sender's and a receiver's NVSwitch port, channels of different orders). One queue per link (processor
// sharing, pipeline.cpp) cannot hold this: a flow's share of one link depends on its other links.
// The blocks share the links max-min fairly, as SimGrid shares the chunk level's flows, recomputed
// once per instant at which blocks start or are sent.
#include <cstddef>
#include <functional>
#include <vector>

#include "sim/algorithms/pipeline.hpp"

namespace commstack::sim::detail {

class LinkSharing {
 public:
  // The solve is over every block in flight: through the channels' different orders one link's
  // flows reach every other link. It costs about (blocks in flight + links) per instant, hence
  // kMaxMinBudget (pipeline.hpp).
  explicit LinkSharing(const PipeHops& ph);

  // Hop e's next block starts crossing its links now.
  void join(std::size_t e, double now);
  // Hop e's send-completion event fired at `now`: e and the blocks due within kSameFinish of it
  // (lock-step chains) leave their links; returns them.
  const std::vector<std::size_t>& leave_due(std::size_t e, double now);
  // Whether blocks joined or left at the current instant.
  bool changed() const { return dirty_; }
  // New rates after this instant's joins and leaves; schedule(time, hop, version) for the earliest
  // send completion (one event: the rates change at every solve, an event per block would fill
  // the queue with stale ones).
  void reshare(double now, const std::function<void(double, std::size_t, long)>& schedule);
  // Whether an event scheduled with this version still stands.
  bool current(long version) const { return version == solves_; }

 private:
  const PipeHop& hop(std::size_t e) const { return hops_[e / n_][e % n_]; }
  double finish_time(std::size_t e) const { return last_[e] + remaining_[e] / rate_[e]; }
  void solve();  // progressive filling over the blocks in flight

  const std::vector<std::vector<PipeHop>>& hops_;
  std::size_t n_;
  std::vector<double> remaining_, rate_, last_;  // per hop: fraction of its block left, blocks/s
  std::vector<std::vector<std::size_t>> on_;     // per shared link: the blocks crossing it now
  std::vector<double> capacity_;                 // per shared link: blocks per second
  std::vector<std::size_t> active_;              // every block in flight
  std::vector<std::size_t> leaving_;
  bool dirty_ = false;
  long solves_ = 0;
  // solve()'s scratch space
  std::vector<double> left_, old_;
  std::vector<int> unfixed_;
  std::vector<char> fixed_;
  std::vector<std::size_t> open_;
};

}  // namespace commstack::sim::detail
