#pragma once
// Byte sizes as users type them (8, 1K, 16M, 2G; powers of 1024 like nccl-tests -b/-e) and
// bandwidth/latency strings in cluster files ("400Gbps", "450GB/s", "2us").
#include <cstdint>
#include <string>
#include <string_view>

namespace commstack {

// "16G" -> 17179869184. Accepts an optional B and K/M/G/T suffix (binary). Throws InputError
// naming `what` (the flag or field) for negatives, garbage, or overflow.
std::uint64_t parse_bytes(std::string_view text, std::string_view what);

// The physical range a link's bandwidth and latency may take: beyond it a value is a typo (a unit
// missing, "1e-300"), and it would make the simulation's times infinite or its engine fail.
inline constexpr double kMinBandwidthBps = 1e3;   // 8 kb/s
inline constexpr double kMaxBandwidthBps = 1e15;  // 8 Pb/s
inline constexpr double kMaxLatencyS = 1.0;

// The most GPUs a simulated machine (and so a trace to replay) may have: 262,144, far beyond any
// machine, and it keeps memory bounded.
inline constexpr long long kMaxGpus = 1 << 18;

// Bandwidth in bytes per second from "400Gbps" / "400Gb/s" (bits, decimal), "450GB/s" / "450GBps"
// (bytes, decimal), or a bare number (bytes/s). Must be within [kMinBandwidthBps, kMaxBandwidthBps].
double parse_bandwidth(std::string_view text, std::string_view what);

// Latency in seconds from "850ns", "2us", "1.5ms", "0.001s", or a bare number (seconds). Must be
// within [0, kMaxLatencyS].
double parse_latency(std::string_view text, std::string_view what);

// 17179869184 -> "16G" when exact, else the number of bytes.
std::string format_bytes(std::uint64_t bytes);

}  // namespace commstack
