#include "workloads/graph/schedule.hpp"

#include <algorithm>

namespace commstack::workloads {

std::vector<ScheduleStep> pipeline_schedule(int pp, int stage, std::int64_t m, int v) {
  std::vector<ScheduleStep> out;
  const std::int64_t total = m * v;
  std::int64_t warmup = 0;
  if (v == 1) {
    warmup = std::min<std::int64_t>(pp - stage - 1, m);
  } else {
    warmup = m == pp ? total : std::min<std::int64_t>(std::int64_t{pp - stage - 1} * 2 + std::int64_t{v - 1} * pp, total);
  }
  const std::int64_t group = std::int64_t{pp} * v;
  auto step = [&](std::int64_t k, bool forward) {
    int chunk = static_cast<int>((k % group) / pp);
    if (!forward) chunk = v - 1 - chunk;
    return ScheduleStep{forward, static_cast<int>((k / group) * pp + k % pp), chunk};
  };
  for (std::int64_t k = 0; k < warmup; ++k) out.push_back(step(k, true));
  const std::int64_t steady = total - warmup;
  for (std::int64_t i = 0; i < steady; ++i) {
    out.push_back(step(warmup + i, true));
    out.push_back(step(i, false));
  }
  for (std::int64_t k = steady; k < total; ++k) out.push_back(step(k, false));
  return out;
}

int forwards_before_first_backward(const std::vector<ScheduleStep>& steps) {
  int n = 0;
  for (const ScheduleStep& s : steps) {
    if (!s.forward) break;
    ++n;
  }
  return n;
}

}  // namespace commstack::workloads
