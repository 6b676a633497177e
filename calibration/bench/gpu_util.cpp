#include "calibration/bench/gpu_util.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <fmt/format.h>

namespace commstack::bench {

void cuda_check(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return;
  throw EnvError(fmt::format("{}: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e)));
}

std::string nccl_result_text(ncclResult_t r) { return fmt::format("{} ({})", ncclGetErrorString(r), static_cast<int>(r)); }

void nccl_check(ncclResult_t r, const std::string& what) {
  if (r == ncclSuccess) return;
  throw EnvError(fmt::format("{}: NCCL error {}", what, nccl_result_text(r)));
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

struct Watchdog {
  std::mutex m;
  std::condition_variable cv;
  bool armed = false;
  std::chrono::steady_clock::time_point deadline;
  std::string what;
  double seconds = 0;
  std::thread thread;

  Watchdog() {
    thread = std::thread([this] {
      std::unique_lock<std::mutex> lock(m);
      for (;;) {
        if (!armed) {
          cv.wait(lock);
          continue;
        }
        if (cv.wait_until(lock, deadline) == std::cv_status::timeout && armed &&
            std::chrono::steady_clock::now() >= deadline) {
          std::fprintf(stderr, "commstack-bench: error: %s did not finish within %.0f s; aborting (a peer rank may "
                       "have failed, or the network/NCCL setup is wrong: rerun with NCCL_DEBUG=INFO)\n",
                       what.c_str(), seconds);
          std::fflush(stderr);
          std::_Exit(4);
        }
      }
    });
    thread.detach();  // lives as long as the process; never joined
  }
};

Watchdog& watchdog() {
  static Watchdog* w = new Watchdog();  // leaked on purpose: a detached thread uses it until exit
  return *w;
}

}  // namespace

void watchdog_arm(double seconds, const std::string& what) {
  Watchdog& w = watchdog();
  {
    std::lock_guard<std::mutex> lock(w.m);
    w.armed = true;
    w.seconds = seconds;
    w.what = what;
    w.deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                        std::chrono::duration<double>(seconds));
  }
  w.cv.notify_all();
}

void watchdog_disarm() {
  Watchdog& w = watchdog();
  {
    std::lock_guard<std::mutex> lock(w.m);
    w.armed = false;
  }
  w.cv.notify_all();
}

}  // namespace commstack::bench
