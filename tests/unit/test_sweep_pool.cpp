// The process pool of the sweep: every item runs in its own process; results, input errors and
// crashes come back to the parent, whatever the number of processes.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include <csignal>
#include <cstdio>
#include <map>
#include <set>

#include "common/error.hpp"
#include "sim/sweep/progress.hpp"
#include "sim/sweep/worker_pool.hpp"

using namespace commstack;
using namespace commstack::sim::sweep;

TEST_CASE("sweep: each item runs in its own process and the results come back") {
  for (int jobs : {1, 3}) {
    std::map<std::size_t, PointOutcome> got;
    std::vector<std::size_t> items = {0, 1, 2, 3, 4, 5, 6};
    run_in_processes(
        items, jobs,
        [](std::size_t i) {
          if (i == 5) throw InputError("point 5: tp 3 does not divide 8 GPUs");
          if (i == 6) std::raise(SIGKILL);
          std::fprintf(stderr, "note %zu\n", i);
          return std::to_string(i * i) + " pid " + std::to_string(::getpid());
        },
        [&](std::size_t i, PointOutcome o) { got.emplace(i, std::move(o)); });
    REQUIRE(got.size() == 7);
    std::set<std::string> pids;
    for (std::size_t i = 0; i < 5; ++i) {
      CHECK(got[i].status == PointStatus::ok);
      CHECK(got[i].payload.rfind(std::to_string(i * i) + " pid ", 0) == 0);
      CHECK(got[i].log == "note " + std::to_string(i) + "\n");
      pids.insert(got[i].payload.substr(got[i].payload.find("pid ")));
    }
    CHECK(pids.size() == 5);  // five different processes
    CHECK(pids.count("pid " + std::to_string(::getpid())) == 0);
    CHECK(got[5].status == PointStatus::invalid);
    CHECK(got[5].payload == "point 5: tp 3 does not divide 8 GPUs");
    CHECK(got[6].status == PointStatus::failed);
    CHECK(got[6].payload.find("killed by signal 9") != std::string::npos);
  }
}

TEST_CASE("sweep: at most `jobs` processes run at once") {
  // Each child writes a start mark into a pipe and sleeps; at each completion the parent counts
  // the marks: started - (finished before this one) is the number alive at once, at most `jobs`.
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  REQUIRE(::fcntl(fds[0], F_SETFL, O_NONBLOCK) == 0);
  std::size_t finished = 0, started = 0, most_alive = 0;
  run_in_processes(
      {0, 1, 2, 3, 4, 5}, 2,
      [&](std::size_t) {
        const char c = 's';
        if (::write(fds[1], &c, 1) != 1) return std::string("write failed");
        ::usleep(50000);
        return std::string("x");
      },
      [&](std::size_t, PointOutcome o) {
        CHECK(o.payload == "x");
        char buf[16];
        ssize_t n;
        while ((n = ::read(fds[0], buf, sizeof buf)) > 0) started += static_cast<std::size_t>(n);
        most_alive = std::max(most_alive, started - finished);
        ++finished;
      });
  CHECK(finished == 6);
  CHECK(started == 6);
  CHECK(most_alive == 2);  // the 50 ms sleeps overlap: two at once, never three
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("sweep: the progress line counts points, elapsed time and the time left") {
  CHECK(ProgressBar::render("sweep", 12, 48, 12, 60.0, 10) ==
        "sweep [##........] 12/48 points  elapsed 1:00  eta 3:00");
  // Resumed points (done before this run) do not count in the rate.
  CHECK(ProgressBar::render("sweep", 30, 40, 5, 50.0, 4) == "sweep [###.] 30/40 points  elapsed 0:50  eta 1:40");
  CHECK(ProgressBar::render("sweep", 0, 8, 0, 3.0, 4) == "sweep [....] 0/8 points  elapsed 0:03  eta --:--");
  CHECK(format_duration(3725) == "1:02:05");
}
