#pragma once
// Runs one task per item, each in its own forked process, at most `jobs` at a time. A separate
// process per point is required: SimGrid allows one engine per process and a simulator is bound
// to one topology. It also isolates a point that crashes from the rest of the sweep.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace commstack::sim::sweep {

enum class PointStatus {
  ok,       // the task returned its result
  invalid,  // the task raised InputError: the point's configuration is impossible (kept on resume)
  failed,   // the task raised another exception or its process died (retried on resume)
};
const char* to_string(PointStatus s);

struct PointOutcome {
  PointStatus status = PointStatus::failed;
  std::string payload;  // ok: the task's return value; otherwise the error message
  std::string log;      // what the task wrote on stderr (notes), empty if nothing
};

// Runs in the child process; its return value travels back through a pipe.
using PoolTask = std::function<std::string(std::size_t item)>;
// Called in the parent, in completion order.
using PoolDone = std::function<void(std::size_t item, PointOutcome outcome)>;
// Called in the parent about once a second while tasks run (progress display).
using PoolTick = std::function<void()>;

// Runs task(item) for every item with at most `jobs` child processes alive. The children must not
// touch MPI or anything else shared with the parent; they end with _exit.
void run_in_processes(const std::vector<std::size_t>& items, int jobs, const PoolTask& task, const PoolDone& done,
                      const PoolTick& tick = {});

// CPUs this process may run on (Slurm and mpirun bindings respected), at least 1.
int usable_cpus();

}  // namespace commstack::sim::sweep
