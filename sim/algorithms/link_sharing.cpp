#include "sim/algorithms/link_sharing.hpp"

#include <algorithm>
#include <limits>

namespace commstack::sim::detail {

LinkSharing::LinkSharing(const PipeHops& ph) : hops_(ph.hops), n_(ph.hops.front().size()) {
  const std::size_t F = hops_.size() * n_;
  const auto M = static_cast<std::size_t>(ph.shared_links);
  remaining_.assign(F, 0.0);
  rate_.assign(F, 0.0);
  last_.assign(F, 0.0);
  fixed_.assign(F, 0);
  on_.resize(M);
  capacity_.assign(M, 0.0);
  left_.resize(M);
  unfixed_.resize(M);
  for (const auto& channel : hops_)
    for (const PipeHop& h : channel)
      for (const auto& u : h.uses) capacity_[static_cast<std::size_t>(u.link)] = 1 / u.t;
}

void LinkSharing::join(std::size_t e, double now) {
  remaining_[e] = 1;
  rate_[e] = 0;
  last_[e] = now;
  active_.push_back(e);
  dirty_ = true;
  for (const auto& u : hop(e).uses) on_[static_cast<std::size_t>(u.link)].push_back(e);
}

const std::vector<std::size_t>& LinkSharing::leave_due(std::size_t e, double now) {
  leaving_.assign(1, e);
  auto due = [&](std::size_t o) {
    if (o != e && std::find(leaving_.begin(), leaving_.end(), o) == leaving_.end() &&
        finish_time(o) - now <= kSameFinish * hop(o).t0)
      leaving_.push_back(o);
  };
  for (const std::size_t o : active_) due(o);
  for (const std::size_t o : leaving_) {
    rate_[o] = 0;
    active_.erase(std::find(active_.begin(), active_.end(), o));
    for (const auto& u : hop(o).uses) {
      auto& v = on_[static_cast<std::size_t>(u.link)];
      v.erase(std::find(v.begin(), v.end(), o));
    }
  }
  dirty_ = true;
  return leaving_;
}

void LinkSharing::solve() {
  for (const std::size_t e : active_) fixed_[e] = 0;
  open_.clear();
  for (std::size_t l = 0; l < on_.size(); ++l) {
    left_[l] = capacity_[l];
    unfixed_[l] = static_cast<int>(on_[l].size());
    if (unfixed_[l] > 0) open_.push_back(l);
  }
  std::size_t pending = active_.size();
  auto fix = [&](std::size_t e, double r) {
    fixed_[e] = 1;
    rate_[e] = r;
    --pending;
    for (const auto& u : hop(e).uses) {
      const auto l = static_cast<std::size_t>(u.link);
      left_[l] = std::max(0.0, left_[l] - r);
      --unfixed_[l];
    }
  };
  // Each round fixes the blocks of the links (or of their own unshared links) with the smallest
  // equal share; what they take leaves the rest of their other links to the others. A chain's
  // pipeline has few distinct shares at an instant, so rounds are few.
  while (pending > 0) {
    double best = std::numeric_limits<double>::infinity();
    for (const std::size_t l : open_) best = std::min(best, left_[l] / unfixed_[l]);
    for (const std::size_t e : active_)
      if (!fixed_[e] && hop(e).t_alone > 0) best = std::min(best, 1 / hop(e).t_alone);
    const double at = best * (1 + 1e-12);
    for (const std::size_t l : open_)
      if (unfixed_[l] > 0 && left_[l] / unfixed_[l] <= at)
        for (const std::size_t e : on_[l])
          if (!fixed_[e]) fix(e, best);
    for (const std::size_t e : active_)
      if (!fixed_[e] && hop(e).t_alone > 0 && 1 / hop(e).t_alone <= at) fix(e, best);
    std::erase_if(open_, [&](std::size_t l) { return unfixed_[l] == 0; });
  }
}

void LinkSharing::reshare(double now, const std::function<void(double, std::size_t, long)>& schedule) {
  old_.resize(active_.size());
  for (std::size_t k = 0; k < active_.size(); ++k) old_[k] = rate_[active_[k]];
  solve();
  double first = std::numeric_limits<double>::infinity();
  std::size_t who = 0;
  for (std::size_t k = 0; k < active_.size(); ++k) {
    const std::size_t e = active_[k];
    remaining_[e] = std::max(0.0, remaining_[e] - old_[k] * (now - last_[e]));
    last_[e] = now;
    if (finish_time(e) < first) {
      first = finish_time(e);
      who = e;
    }
  }
  ++solves_;
  dirty_ = false;
  if (!active_.empty()) schedule(first, who, solves_);
}

}  // namespace commstack::sim::detail
