// Fork-per-task execution (isolated_run.hpp). The child writes one message to its pipe: a tag
// byte ('J' result JSON, 'I' InputError message, 'E' other error) followed by the text, then
// _exit()s without running the parent's atexit handlers or destructors (SimGrid state, open
// streams). The parent polls every running child's pipe so that a large result never blocks a
// child on a full pipe.
#include "sim/scenario/isolated_run.hpp"

#include <poll.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack::sim::scenario {
namespace {

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // parent gone: nothing sensible left to do
    done += static_cast<std::size_t>(n);
  }
}

[[noreturn]] void child_main(int fd, const IsolatedWork& work) {
  int code = 0;
  std::string message;
  try {
    message = "J" + work().dump();
  } catch (const InputError& e) {
    message = std::string("I") + e.what();
    code = 2;
  } catch (const std::exception& e) {
    message = std::string("E") + e.what();
    code = 1;
  } catch (...) {
    message = "Eunknown exception";
    code = 1;
  }
  write_all(fd, message);
  ::close(fd);
  std::fflush(nullptr);  // the child's own stdout/stderr lines (notes), not the parent's
  ::_exit(code);
}

struct Running {
  std::size_t index = 0;
  pid_t pid = -1;
  int fd = -1;
  std::string buffer;
};

Running start(const IsolatedTask& task, std::size_t index) {
  int fds[2];
  if (::pipe(fds) != 0)
    throw std::runtime_error(fmt::format("{}: pipe() failed: {}", task.label, std::strerror(errno)));
  // Flush before forking so that buffered output is not written twice (once by each process).
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(fmt::format("{}: fork() failed: {}", task.label, std::strerror(errno)));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(fds[1], task.work);
  }
  ::close(fds[1]);
  return Running{index, pid, fds[0], {}};
}

// The result of a finished child, or the exception its failure maps to.
struct Outcome {
  std::optional<nlohmann::ordered_json> result;
  std::exception_ptr error;
};

Outcome finish(Running& r, const IsolatedTask& task) {
  ::close(r.fd);
  int status = 0;
  while (::waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
  }
  Outcome out;
  const std::string& b = r.buffer;
  if (!b.empty() && b[0] == 'J' && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    try {
      out.result = nlohmann::ordered_json::parse(b.begin() + 1, b.end());
    } catch (const nlohmann::json::exception& e) {
      out.error = std::make_exception_ptr(
          std::runtime_error(fmt::format("{}: unreadable result: {}", task.label, e.what())));
    }
    return out;
  }
  if (!b.empty() && b[0] == 'I') {
    out.error = std::make_exception_ptr(InputError(fmt::format("{}: {}", task.label, b.substr(1))));
  } else if (!b.empty() && b[0] == 'E') {
    out.error = std::make_exception_ptr(std::runtime_error(fmt::format("{}: {}", task.label, b.substr(1))));
  } else if (WIFSIGNALED(status)) {
    out.error = std::make_exception_ptr(
        std::runtime_error(fmt::format("{}: the simulation process was killed by signal {} ({})", task.label,
                                       WTERMSIG(status), strsignal(WTERMSIG(status)))));
  } else {
    out.error = std::make_exception_ptr(
        std::runtime_error(fmt::format("{}: the simulation process exited with status {} without a result",
                                       task.label, WIFEXITED(status) ? WEXITSTATUS(status) : -1)));
  }
  return out;
}

}  // namespace

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

nlohmann::ordered_json run_isolated(const IsolatedTask& task) {
  return run_isolated_all({task}, 1).front();
}

std::vector<nlohmann::ordered_json> run_isolated_all(const std::vector<IsolatedTask>& tasks, int jobs,
                                                     const std::function<void(std::size_t)>& on_done) {
  if (jobs < 1) throw std::invalid_argument("run_isolated_all: jobs must be >= 1");
  std::vector<Outcome> outcomes(tasks.size());
  std::vector<Running> running;
  std::size_t next = 0;
  while (next < tasks.size() || !running.empty()) {
    while (next < tasks.size() && static_cast<int>(running.size()) < jobs) {
      try {
        running.push_back(start(tasks[next], next));
      } catch (...) {
        outcomes[next].error = std::current_exception();
        if (on_done) on_done(next);
      }
      ++next;
    }
    if (running.empty()) continue;
    std::vector<pollfd> fds;
    fds.reserve(running.size());
    for (const auto& r : running) fds.push_back({r.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("poll() failed: {}", std::strerror(errno)));
    }
    for (std::size_t k = fds.size(); k-- > 0;) {
      if (fds[k].revents == 0) continue;
      Running& r = running[k];
      char buf[65536];
      const ssize_t n = ::read(r.fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        r.buffer.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      outcomes[r.index] = finish(r, tasks[r.index]);  // EOF (or a read error): the child is done
      if (on_done) on_done(r.index);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  std::vector<nlohmann::ordered_json> results;
  results.reserve(tasks.size());
  for (auto& o : outcomes) {
    if (o.error) std::rethrow_exception(o.error);
    results.push_back(std::move(*o.result));
  }
  return results;
}

}  // namespace commstack::sim::scenario
