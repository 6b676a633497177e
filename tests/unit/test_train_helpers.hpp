#pragma once
// Helpers for the train tests: a SimGrid engine cannot be created twice in one process, so a
// test that needs two topologies (or two independent runs) forks a child per run and reads its
// answer back through a pipe.
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <stdexcept>
#include <string>

#include "sim/train/train.hpp"
#include "topologies/cluster.hpp"
#include "workloads/parallel/parallel.hpp"

namespace train_test {

inline std::string in_child(const std::function<std::string()>& fn) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    int code = 0;
    try {
      out = fn();
    } catch (const std::exception& e) {
      out = std::string("EXCEPTION: ") + e.what();
      code = 1;
    }
    std::size_t off = 0;
    while (off < out.size()) {
      const ssize_t w = write(fds[1], out.data() + off, out.size() - off);
      if (w <= 0) break;
      off += static_cast<std::size_t>(w);
    }
    close(fds[1]);
    _exit(code);
  }
  close(fds[1]);
  std::string out;
  char buf[65536];
  ssize_t n = 0;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("child run failed: " + out);
  return out;
}

// A validated setup for `model` on `gpus` GPUs.
inline commstack::sim::train::TrainSetup setup(const std::string& model, int tp, int pp, int dp, int gpus,
                                               std::int64_t mb, std::int64_t gbs,
                                               commstack::workloads::Recompute rc = commstack::workloads::Recompute::full) {
  commstack::sim::train::TrainSetup s;
  s.model = commstack::workloads::builtin_model(model);
  s.par.tp = tp;
  s.par.pp = pp;
  s.par.dp = dp;
  s.par.micro_batch = mb;
  s.par.global_batch = gbs;
  s.par.recompute = rc;
  commstack::workloads::validate(s.model, s.par, gpus, "test");
  s.compute = commstack::workloads::builtin_compute_profile("a100-80gb");
  return s;
}

}  // namespace train_test
