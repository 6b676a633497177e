#include "cli/option_values.hpp"

#include <charconv>
#include <system_error>

#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack::cli {

long long parse_int(const std::string& text, const std::string& flag, long long lo, long long hi) {
  long long v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) {
    throw InputError(fmt::format("{}: '{}' is not a whole number; expected an integer from {} to {}", flag, text, lo, hi));
  }
  if (v < lo || v > hi) throw InputError(fmt::format("{}: {} is out of range; expected {} to {}", flag, v, lo, hi));
  return v;
}

bool parse_on_off(const std::string& text, const std::string& flag) {
  if (text == "on") return true;
  if (text == "off") return false;
  throw InputError(fmt::format("{}: unknown '{}'; expected on or off", flag, text));
}

double grad_bytes_option(const std::string& text) {
  if (text == "bf16") return 2;
  if (text == "fp32") return 4;
  throw InputError(fmt::format("--grad-dtype: unknown '{}'; expected bf16 or fp32", text));
}

workloads::TokenDispatcher token_dispatcher_option(const std::string& text) {
  if (text == "alltoall") return workloads::TokenDispatcher::alltoall;
  if (text == "allgather") return workloads::TokenDispatcher::allgather;
  if (text == "flex")
    throw InputError(
        "--moe-token-dispatcher: 'flex' (DeepEP / HybridEP fused dispatch kernels) is not modelled; expected "
        "alltoall or allgather");
  throw InputError(fmt::format("--moe-token-dispatcher: unknown '{}'; expected alltoall or allgather", text));
}

bool parse_nccl_switch(const std::string& text, const std::string& flag) {
  if (text == "on" || text == "1") return true;
  if (text == "off" || text == "0") return false;
  throw InputError(fmt::format("{}: unknown '{}'; expected on or off (or NCCL's 1 or 0)", flag, text));
}

}  // namespace commstack::cli
