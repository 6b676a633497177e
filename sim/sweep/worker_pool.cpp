#include "sim/sweep/worker_pool.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack::sim::sweep {
namespace {

struct Child {
  pid_t pid = -1;
  std::size_t item = 0;
  int out_fd = -1;  // status byte + payload
  int err_fd = -1;  // the child's stderr
  std::string out, err;
};

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // the parent is gone; nothing useful left to do
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

[[noreturn]] void child_main(const PoolTask& task, std::size_t item, int out_fd, int err_fd) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a killed sweep leaves no orphans computing
  ::dup2(err_fd, STDERR_FILENO);
  ::close(err_fd);
  const int devnull = ::open("/dev/null", O_WRONLY);
  if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
  char status = 'F';
  std::string payload;
  try {
    payload = task(item);
    status = 'O';
  } catch (const InputError& e) {
    status = 'I';
    payload = e.what();
  } catch (const std::exception& e) {
    payload = e.what();
  } catch (...) {
    payload = "unknown exception";
  }
  std::fflush(stderr);
  write_all(out_fd, &status, 1);
  write_all(out_fd, payload.data(), payload.size());
  ::close(out_fd);
  ::_exit(0);  // no atexit handlers, no destructors of state shared with the parent (MPI, files)
}

Child spawn(const PoolTask& task, std::size_t item) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  }
  std::fflush(nullptr);  // buffered output would otherwise be written twice
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::close(out[0]);
    ::close(err[0]);
    child_main(task, item, out[1], err[1]);
  }
  ::close(out[1]);
  ::close(err[1]);
  Child c;
  c.pid = pid;
  c.item = item;
  c.out_fd = out[0];
  c.err_fd = err[0];
  return c;
}

// Reads what is available; closes the descriptor at end of file.
void drain(int& fd, std::string& into) {
  char buf[65536];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) {
    into.append(buf, static_cast<std::size_t>(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    ::close(fd);
    fd = -1;
  }
}

PointOutcome finish(Child& c) {
  int wstatus = 0;
  while (::waitpid(c.pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  PointOutcome o;
  o.log = std::move(c.err);
  if (WIFSIGNALED(wstatus)) {
    o.status = PointStatus::failed;
    o.payload = fmt::format("the point's process was killed by signal {} ({})", WTERMSIG(wstatus),
                            strsignal(WTERMSIG(wstatus)));
  } else if (c.out.empty() || (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 0)) {
    o.status = PointStatus::failed;
    o.payload = fmt::format("the point's process exited with status {} without a result",
                            WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
  } else {
    o.status = c.out[0] == 'O' ? PointStatus::ok : c.out[0] == 'I' ? PointStatus::invalid : PointStatus::failed;
    o.payload = c.out.substr(1);
  }
  return o;
}

}  // namespace

const char* to_string(PointStatus s) {
  switch (s) {
    case PointStatus::ok: return "ok";
    case PointStatus::invalid: return "invalid";
    case PointStatus::failed: return "failed";
  }
  return "failed";
}

void run_in_processes(const std::vector<std::size_t>& items, int jobs, const PoolTask& task, const PoolDone& done,
                      const PoolTick& tick) {
  if (jobs < 1) jobs = 1;
  std::vector<Child> running;
  std::size_t next = 0;
  while (next < items.size() || !running.empty()) {
    while (next < items.size() && static_cast<int>(running.size()) < jobs) running.push_back(spawn(task, items[next++]));
    std::vector<pollfd> fds;
    for (const auto& c : running) {
      if (c.out_fd >= 0) fds.push_back({c.out_fd, POLLIN, 0});
      if (c.err_fd >= 0) fds.push_back({c.err_fd, POLLIN, 0});
    }
    if (!fds.empty() && ::poll(fds.data(), fds.size(), 1000) < 0 && errno != EINTR) {
      throw std::runtime_error(fmt::format("poll: {}", std::strerror(errno)));
    }
    for (const auto& p : fds) {
      if (p.revents == 0) continue;
      for (auto& c : running) {
        if (c.out_fd == p.fd) drain(c.out_fd, c.out);
        else if (c.err_fd == p.fd) drain(c.err_fd, c.err);
      }
    }
    for (std::size_t k = 0; k < running.size();) {
      if (running[k].out_fd < 0 && running[k].err_fd < 0) {
        Child c = std::move(running[k]);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
        done(c.item, finish(c));
      } else {
        ++k;
      }
    }
    if (tick) tick();
  }
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace commstack::sim::sweep
