#pragma once
// Runs work in a forked child process and brings its JSON result back over a pipe.
//
// Why: the SimGrid engine is a process-wide singleton (one engine, one platform per process; see
// sim/engine/simulator.hpp), so two simulations on two different topologies cannot share a
// process. Each job (a what-if variant, a sweep point) therefore runs in its own child, which
// builds its own Simulator, and the parent only collects JSON. The parent stays deterministic:
// results come back in input order whatever the completion order.
//
// Errors: an InputError thrown by the work is rethrown in the parent with the same message; any
// other exception, a crash or a signal becomes std::runtime_error naming the label of the task.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace commstack::sim::scenario {

using IsolatedWork = std::function<nlohmann::ordered_json()>;

struct IsolatedTask {
  std::string label;  // for error messages ("variant '800G NICs'")
  IsolatedWork work;
};

// Runs one task in a child process and returns its result (blocks until the child exits).
nlohmann::ordered_json run_isolated(const IsolatedTask& task);

// Runs every task, at most `jobs` children at a time (jobs >= 1), and returns the results in the
// order of `tasks`. When tasks fail, all started children are still waited for, and the error of
// the first failing task in input order is thrown (so the message does not depend on timing).
// `on_done(index)` (optional) is called in the parent as each task finishes (progress bars).
std::vector<nlohmann::ordered_json> run_isolated_all(const std::vector<IsolatedTask>& tasks, int jobs,
                                                     const std::function<void(std::size_t)>& on_done = {});

// Processors available to this process (sched_getaffinity), at least 1: the default for --jobs.
int available_cpus();

}  // namespace commstack::sim::scenario
