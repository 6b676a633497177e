// Communicator creation per setting. NCCL reads NCCL_ALGO and NCCL_PROTO when a communicator is
// created (its tuning tables are built in init), so the bench sets them in the environment just
// before ncclCommInitRankConfig and restores them right after; the CTA bounds go through
// ncclConfig_t (minCTAs/maxCTAs), the documented per-communicator replacement of NCCL_MIN/MAX_CTAS.
#include <cstdlib>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "calibration/bench/context.hpp"
#include "calibration/bench/gpu_util.hpp"

namespace commstack::bench {
namespace {

class ScopedEnv {
public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value.empty()) unsetenv(name);
    else setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

void create_comms(Context& ctx, const CommSetting& s) {
  ScopedEnv algo("NCCL_ALGO", nccl_env_value(s.algo));
  ScopedEnv proto("NCCL_PROTO", nccl_env_value(s.proto));
  ncclUniqueId id{};
  if (ctx.pg->rank() == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  ctx.pg->broadcast(&id, sizeof id, 0);
  const std::string what = fmt::format("NCCL communicator init ({} ranks, algo {}, proto {}, ctas {})", ctx.nranks,
                                       to_string(s.algo), to_string(s.proto), s.ctas);
  watchdog_arm(ctx.init_timeout_s, what);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  if (s.ctas > 0) {
    config.minCTAs = s.ctas;
    config.maxCTAs = s.ctas;
  }
  // One group so that a single process can initialize all its GPUs' ranks together.
  nccl_check(ncclGroupStart(), "ncclGroupStart");
  for (auto& l : ctx.locals) {
    cuda_check(cudaSetDevice(l.device), "cudaSetDevice");
    const ncclResult_t r = ncclCommInitRankConfig(&l.comm, ctx.nranks, id, l.rank, &config);
    if (r != ncclSuccess) {
      ncclGroupEnd();
      nccl_check(r, what);
    }
  }
  nccl_check(ncclGroupEnd(), what);
  watchdog_disarm();
}

void destroy_comms(Context& ctx) {
  for (auto& l : ctx.locals) {
    if (!l.comm) continue;
    ncclCommDestroy(l.comm);
    l.comm = nullptr;
  }
}

}  // namespace commstack::bench
