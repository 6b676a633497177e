#pragma once
// Runs the op graph of one training iteration in time. Every op starts when all its
// dependencies have finished (the generator already chains each rank's compute stream and each
// collective stream in issue order, so a stream never runs two ops at once); a collective
// instance starts when every generated member rank is ready and ends for all of them together; a
// send and its recv start together when both are ready. Durations come from a callback (compute
// model, simulated communication). Compute/communication overlap falls out of the dependencies.
//
// Folded graphs (one representative rank per pipeline stage) stand for all ranks of a stage:
// members of a communicator that were not generated behave exactly like the generated one, so
// they are never waited for, and a message from a rank that was not generated leaves at the same
// moment as the generated rank's own message with the same tag (its mirror image).
#include <functional>
#include <vector>

#include "workloads/graph/op_graph.hpp"

namespace commstack::sim::train {

struct Schedule {
  std::vector<double> start;   // per op id, seconds from iteration start
  std::vector<double> finish;
  // The op whose completion made this op start (a dependency, or the member / peer that arrived
  // last); -1 when it could start at time 0. Used to say what an idle compute stream waited for.
  std::vector<int> binding;
  double iteration_s = 0;  // last op's finish
};

using DurationFn = std::function<double(const workloads::Op&)>;

// Throws std::logic_error when the graph cannot complete (a dependency cycle through matched
// communication; the generator guarantees this never happens).
Schedule schedule_ops(const workloads::OpGraph& g, const DurationFn& duration);

}  // namespace commstack::sim::train
