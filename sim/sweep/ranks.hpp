#pragma once
// The processes of one sweep: a single process, or the ranks of an MPI job (mpirun / srun). The
// sweep only needs a broadcast from rank 0 and a gather to rank 0, of text.
#include <memory>
#include <string>
#include <vector>

namespace commstack::sim::sweep {

class Ranks {
public:
  virtual ~Ranks() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rank 0's `text` on every rank.
  virtual std::string broadcast(const std::string& text) = 0;
  // On rank 0: every rank's `text` in rank order; elsewhere: empty.
  virtual std::vector<std::string> gather(const std::string& text) = 0;
  // Ends every rank (an error on one rank that the others cannot learn about otherwise).
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

// One process, no MPI.
std::unique_ptr<Ranks> single_process();

// The ranks of this launch: MPI when this build has it and a launcher (mpirun, mpiexec, srun)
// started the process, else a single process. Initializes MPI, so call it before any fork or
// simulation. Refuses (InputError) a multi-rank launch of a build without MPI, whose copies would
// each run the whole sweep into the same directory.
std::unique_ptr<Ranks> launch_ranks();

// Whether this build has MPI, and a description of it for --help.
bool mpi_built();
std::string mpi_description();

// The number of processes a launcher says it started (1 when none did), read from its environment.
int launcher_world_size();

}  // namespace commstack::sim::sweep
