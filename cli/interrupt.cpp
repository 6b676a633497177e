#include "cli/interrupt.hpp"

#include <csignal>
#include <cstring>

#include <unistd.h>

namespace commstack::cli {
namespace {

volatile std::sig_atomic_t g_requested = 0;
struct sigaction g_previous {};

void on_sigint(int) {
  g_requested = 1;
  // Only async-signal-safe calls here: write(2), not stdio.
  static const char kMessage[] =
      "\ncommstack: Ctrl-C: stopping after the simulation under way (Ctrl-C again to quit now)\n";
  [[maybe_unused]] const auto n = write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
}

}  // namespace

StopOnInterrupt::StopOnInterrupt() {
  g_requested = 0;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // the second Ctrl-C gets the default action: the process ends
  sigaction(SIGINT, &sa, &g_previous);
}

StopOnInterrupt::~StopOnInterrupt() {
  sigaction(SIGINT, &g_previous, nullptr);
}

bool StopOnInterrupt::requested() {
  return g_requested != 0;
}

}  // namespace commstack::cli
