#include "sim/sweep/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace commstack::sim::sweep {

std::string format_duration(double seconds) {
  const long long s = std::llround(std::max(0.0, seconds));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string ProgressBar::render(const std::string& label, std::size_t done, std::size_t total, std::size_t done_here,
                                double elapsed_s, int width) {
  const double frac = total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
  const int filled = static_cast<int>(std::floor(frac * width));
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(static_cast<std::size_t>(width), '.');
  // The rate of this run only: resumed points took no time here.
  std::string eta = "--:--";
  if (done >= total) eta = "0:00";
  else if (done_here > 0) eta = format_duration(elapsed_s / static_cast<double>(done_here) * static_cast<double>(total - done));
  return fmt::format("{} [{}] {}/{} points  elapsed {}  eta {}", label, bar, done, total, format_duration(elapsed_s), eta);
}

ProgressBar::ProgressBar(std::string label, std::size_t total, std::size_t already, bool enabled, std::FILE* out)
    : label_(std::move(label)), total_(total), done_(already), enabled_(enabled), tty_(::isatty(::fileno(out)) != 0),
      out_(out), start_(std::chrono::steady_clock::now()), last_draw_(start_) {
  if (enabled_) draw(true);
}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::point_done() {
  ++done_;
  ++done_here_;
  draw(false);
}

void ProgressBar::refresh() { draw(false); }

void ProgressBar::finish() {
  if (!enabled_ || finished_) return;
  draw(true);
  if (tty_) std::fputc('\n', out_);
  std::fflush(out_);
  finished_ = true;
}

void ProgressBar::draw(bool force) {
  if (!enabled_ || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  const auto since = now - last_draw_;
  if (!force && since < (tty_ ? std::chrono::milliseconds(200) : std::chrono::milliseconds(10000))) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const std::string line = render(label_, done_, total_, done_here_, elapsed, 30);
  if (tty_) fmt::print(out_, "\r{}\x1b[K", line);  // redraw in place, clear the rest of the line
  else fmt::print(out_, "{}\n", line);
  std::fflush(out_);
}

}  // namespace commstack::sim::sweep
