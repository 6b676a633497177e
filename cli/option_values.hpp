#pragma once
// Values of command-line flags that CLI11 takes as text so that a bad value gets one plain error
// naming the flag (CLI11's own conversion messages do not say what was expected).
#include <string>

#include "workloads/parallel/parallel.hpp"

namespace commstack::cli {

// A whole number in [lo, hi]; InputError "FLAG: 'x' is not a whole number; expected ..." otherwise.
long long parse_int(const std::string& text, const std::string& flag, long long lo, long long hi);

// "on" -> true, "off" -> false; InputError "FLAG: unknown 'x'; expected on or off" otherwise.
bool parse_on_off(const std::string& text, const std::string& flag);

// --grad-dtype: "bf16" -> 2 bytes per gradient, "fp32" -> 4 (Megatron-LM accumulates and
// all-reduces bf16 runs' gradients in fp32: --accumulate-allreduce-grads-in-fp32).
double grad_bytes_option(const std::string& text);

// --moe-token-dispatcher: "alltoall" or "allgather"; Megatron's "flex" (DeepEP / HybridEP kernels)
// is refused by name, as not modelled.
workloads::TokenDispatcher token_dispatcher_option(const std::string& text);

// An NCCL on/off knob (NCCL_NVLS_ENABLE, NCCL_COLLNET_ENABLE): "on" or "1" -> true, "off" or "0" ->
// false; InputError naming the flag otherwise.
bool parse_nccl_switch(const std::string& text, const std::string& flag);

}  // namespace commstack::cli
