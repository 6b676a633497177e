// sim/scenario/isolated_run: results come back in input order whatever the number of parallel
// children, an InputError keeps its message, and a crashing child becomes an error, not a hang.
#include <doctest/doctest.h>

#include <unistd.h>

#include <csignal>
#include <stdexcept>
#include <string>

#include "common/error.hpp"
#include "sim/scenario/isolated_run.hpp"

using namespace commstack;
using sim::scenario::IsolatedTask;
using sim::scenario::run_isolated;
using sim::scenario::run_isolated_all;

namespace {

// Task i sleeps longer the smaller i is, so with several children they finish in reverse order.
std::vector<IsolatedTask> reversed_finish_tasks(int n) {
  std::vector<IsolatedTask> tasks;
  tasks.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    tasks.push_back({"task " + std::to_string(i), [i, n] {
                       ::usleep(static_cast<useconds_t>((n - i) * 20000));
                       nlohmann::ordered_json j;
                       j["index"] = i;
                       j["pid_differs"] = true;
                       j["square"] = i * i;
                       return j;
                     }});
  }
  return tasks;
}

}  // namespace

TEST_CASE("scenario: isolated runs return their JSON in input order for any number of parallel children") {
  for (int jobs : {1, 2, 5}) {
    const auto results = run_isolated_all(reversed_finish_tasks(5), jobs);
    REQUIRE(results.size() == 5);
    for (int i = 0; i < 5; ++i) {
      CHECK(results[static_cast<std::size_t>(i)].at("index").get<int>() == i);
      CHECK(results[static_cast<std::size_t>(i)].at("square").get<int>() == i * i);
    }
  }
}

TEST_CASE("scenario: the work runs in another process, so the parent's state is untouched") {
  int counter = 0;
  const pid_t parent = ::getpid();
  const auto j = run_isolated({"child", [&] {
                                 counter = 42;  // the child's copy of counter
                                 return nlohmann::ordered_json{{"pid", static_cast<long>(::getpid())}};
                               }});
  CHECK(counter == 0);
  CHECK(j.at("pid").get<long>() != static_cast<long>(parent));
}

TEST_CASE("scenario: an InputError in a child is rethrown with its message and the task label") {
  std::vector<IsolatedTask> tasks = reversed_finish_tasks(3);
  tasks[1].work = []() -> nlohmann::ordered_json {
    throw InputError("scenario.json: $.variants[0].overrides.x: no such field");
  };
  tasks[2].work = []() -> nlohmann::ordered_json { throw InputError("second failure"); };
  for (int jobs : {1, 3}) {
    // The first failing task in input order is reported, whatever finished first.
    CHECK_THROWS_WITH_AS(run_isolated_all(tasks, jobs),
                         "task 1: scenario.json: $.variants[0].overrides.x: no such field", InputError);
  }
}

TEST_CASE("scenario: a child killed by a signal or failing otherwise is an error naming the task") {
  CHECK_THROWS_WITH_AS(run_isolated({"variant 'boom'",
                                     []() -> nlohmann::ordered_json {
                                       std::signal(SIGABRT, SIG_DFL);
                                       std::abort();
                                     }}),
                       doctest::Contains("variant 'boom': the simulation process was killed by signal 6"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(run_isolated({"t", []() -> nlohmann::ordered_json { throw std::logic_error("bug"); }}),
                       "t: bug", std::runtime_error);
}

TEST_CASE("scenario: a result larger than a pipe buffer comes back whole") {
  const auto j = run_isolated({"big", [] {
                                 nlohmann::ordered_json a = nlohmann::ordered_json::array();
                                 for (int i = 0; i < 200000; ++i) a.push_back(i);
                                 return nlohmann::ordered_json{{"a", a}};
                               }});
  REQUIRE(j.at("a").size() == 200000);
  CHECK(j.at("a").back().get<int>() == 199999);
}
