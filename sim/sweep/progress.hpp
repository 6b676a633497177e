#pragma once
// A progress bar on stderr for long sweeps: points done / total, elapsed time and an estimate of
// the time left. Redrawn in place on a terminal; one line at most every 10 s otherwise (batch
// logs), and only when asked there (--progress).
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>

namespace commstack::sim::sweep {

class ProgressBar {
public:
  // total: points this process will report; already: points done before it started (resumed).
  ProgressBar(std::string label, std::size_t total, std::size_t already, bool enabled, std::FILE* out = stderr);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void point_done();  // one more point finished
  void refresh();     // redraw (elapsed time moves on) if due
  void finish();      // final line; later calls do nothing

  // The line as drawn, without control characters (tested).
  static std::string render(const std::string& label, std::size_t done, std::size_t total, std::size_t done_here,
                            double elapsed_s, int width);

private:
  void draw(bool force);
  std::string label_;
  std::size_t total_, done_, done_here_ = 0;
  bool enabled_, tty_, finished_ = false;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// "1:02:03" / "2:03" for a duration in seconds.
std::string format_duration(double seconds);

}  // namespace commstack::sim::sweep
