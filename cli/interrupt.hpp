#pragma once
// Ctrl-C for long searches (`plan`): while a StopOnInterrupt lives, the first SIGINT only sets a
// flag that the search polls between simulations, so it can stop cleanly and print what it has;
// the handler resets itself, so a second Ctrl-C ends the process as usual. main() maps
// Interrupted to exit status 130 (128 + SIGINT, what shells report for a command stopped by Ctrl-C).
#include <exception>

namespace commstack::cli {

class StopOnInterrupt {
 public:
  StopOnInterrupt();
  ~StopOnInterrupt();
  StopOnInterrupt(const StopOnInterrupt&) = delete;
  StopOnInterrupt& operator=(const StopOnInterrupt&) = delete;
  static bool requested();
};

// Thrown after the partial results are printed.
struct Interrupted : std::exception {
  const char* what() const noexcept override { return "interrupted"; }
};

}  // namespace commstack::cli
