#include "calibration/fit/nccl_tests_table_op.hpp"

#include <fmt/format.h>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

namespace commstack::fit {

std::optional<std::uint64_t> nccl_tests_type_bytes(std::string_view t) {
  if (t == "int8" || t == "uint8" || t == "char" || t == "f8e4m3" || t == "f8e5m2") return 1;
  if (t == "half" || t == "bfloat16") return 2;
  if (t == "float" || t == "int32" || t == "uint32" || t == "int") return 4;
  if (t == "double" || t == "int64" || t == "uint64") return 8;
  return std::nullopt;
}

namespace {

// busbw / algbw of the row with the largest algbw (the best-printed one), when both are printed
// with at least three significant digits; its relative uncertainty from the two roundings.
struct BusRatio {
  double value = 0;
  double tolerance = 0;
};
std::optional<BusRatio> bus_ratio(const NcclTestsResult& r) {
  const NcclTestsTiming* best = nullptr;
  for (const auto& row : r.rows)
    if (row.out_of_place && row.out_of_place->algbw_GBps && row.out_of_place->busbw_GBps &&
        (best == nullptr || *row.out_of_place->algbw_GBps > *best->algbw_GBps))
      best = &*row.out_of_place;
  if (best == nullptr || *best->algbw_GBps < 1.0 || *best->busbw_GBps < 1.0) return std::nullopt;
  const double a = *best->algbw_GBps, b = *best->busbw_GBps;
  return BusRatio{b / a, 0.005 / a + 0.005 / b + 1e-9};
}

bool near(const BusRatio& r, double expected) {
  return std::abs(r.value / expected - 1.0) <= r.tolerance;
}

}  // namespace

TableOpInference op_from_table(const NcclTestsResult& r) {
  TableOpInference out;
  std::optional<std::uint64_t> per_rank;  // size / (count x type size), the same on every row
  bool reducing = false, rooted = false, redop_seen = false, root_column = false;
  for (const auto& row : r.rows) {
    if (!row.count || *row.count == 0 || row.size_bytes == 0) continue;
    const auto tb = nccl_tests_type_bytes(row.type);
    if (!tb) {
      out.reason = fmt::format("type '{}' has no known element size", row.type);
      return out;
    }
    // A count past 2^64 / type size (a mangled file) would wrap the product, to 0 at worst.
    if (*row.count > row.size_bytes / *tb) {
      out.reason =
          fmt::format("count {} x type size {} exceeds the size {}", *row.count, *tb, row.size_bytes);
      return out;
    }
    const std::uint64_t elem_bytes = *row.count * *tb;
    if (row.size_bytes % elem_bytes != 0) {
      out.reason =
          fmt::format("size {} is not a multiple of count x type size ({})", row.size_bytes, elem_bytes);
      return out;
    }
    const std::uint64_t k = row.size_bytes / elem_bytes;
    if (per_rank && *per_rank != k) {
      out.reason = "size / (count x type size) differs between rows";
      return out;
    }
    per_rank = k;
    if (!row.redop.empty()) {
      const bool red = row.redop != "none";
      if (redop_seen && red != reducing) {
        out.reason = "the redop column mixes 'none' and a reduction";
        return out;
      }
      reducing = red, redop_seen = true;
    }
    if (row.root) root_column = true;
    if (row.root && *row.root >= 0) rooted = true;
  }
  if (!per_rank || !redop_seen) {
    out.reason = "no row with a size, a count, a type and a redop";
    return out;
  }
  const std::uint64_t k = *per_rank;
  const int ranks = r.ranks_complete && !r.elided ? r.n_ranks : 0;  // 0: the rank lines do not say
  if (ranks > 0 && k != 1 && k != static_cast<std::uint64_t>(ranks)) {
    out.reason = fmt::format("size / (count x type size) = {} is neither 1 nor the {} ranks", k, ranks);
    return out;
  }
  const auto ratio = bus_ratio(r);
  const int n = k > 1 ? static_cast<int>(k) : ranks;  // ranks, where known
  // A bus factor that the printed columns contradict means the rules below do not apply.
  const auto contradicts = [&](double expected) { return ratio && n > 0 && !near(*ratio, expected); };
  if (rooted) {
    if (k != 1) {
      out.reason = fmt::format("a rooted op with size / (count x type size) = {} (gather or scatter?)", k);
      return out;
    }
    if (ratio && !near(*ratio, 1.0)) {
      out.reason = "a rooted op whose busbw is not its algbw";
      return out;
    }
    out.op = reducing ? NcclTestsOp::reduce : NcclTestsOp::broadcast;
    out.candidates = {out.op};
    out.reason =
        fmt::format("redop '{}' with a root and count = size / type size", reducing ? "a reduction" : "none");
    return out;
  }
  if (k > 1) {
    if (contradicts((n - 1.0) / n)) {
      out.reason = fmt::format("busbw / algbw {:.4f} is not (n-1)/n for n = {}", ratio->value, n);
      return out;
    }
    if (!reducing) {
      out.reason = "all_gather or alltoall: both print redop 'none' and count = size / (ranks x type size)";
      out.candidates = {NcclTestsOp::all_gather, NcclTestsOp::alltoall, NcclTestsOp::alltoallv,
                        NcclTestsOp::hypercube};
      // Without a root column a gather or scatter prints the same.
      if (!root_column)
        out.candidates.insert(out.candidates.end(), {NcclTestsOp::gather, NcclTestsOp::scatter});
      return out;
    }
    out.op = NcclTestsOp::reduce_scatter;
    out.candidates = {out.op};
    out.reason = "a reduction with count = size / (ranks x type size)";
    return out;
  }
  // k == 1, not rooted: all_reduce (busbw = 2(n-1)/n algbw) or sendrecv (busbw = algbw), both
  // with a reduction in the redop column; the bus factor tells them apart from 3 ranks on.
  if (!reducing) {
    out.reason = "redop 'none' with count = size / type size and no root: not an op the columns identify";
    return out;
  }
  // Without a root column a reduce prints the same (its bus factor is 1, as sendrecv's).
  out.candidates = {NcclTestsOp::all_reduce, NcclTestsOp::sendrecv};
  if (!root_column) out.candidates.push_back(NcclTestsOp::reduce);
  if (!ratio) {
    out.reason = "all_reduce or sendrecv: the busbw / algbw ratio is not printed precisely enough to tell";
    return out;
  }
  const bool as_sendrecv = near(*ratio, 1.0);
  if (as_sendrecv && (n == 0 || n == 2)) {
    out.reason = "all_reduce or sendrecv: busbw = algbw, which both give on 2 ranks";
    return out;
  }
  if (as_sendrecv) {
    out.op = NcclTestsOp::sendrecv;
    out.candidates = {out.op};
    out.reason = fmt::format("busbw = algbw on {} ranks with count = size / type size", n);
    return out;
  }
  if (ratio->value < 1.0 || ratio->value >= 2.0 || (n > 0 && contradicts(2.0 * (n - 1.0) / n))) {
    out.reason = fmt::format("busbw / algbw {:.4f} fits neither all_reduce nor sendrecv", ratio->value);
    out.candidates.clear();
    return out;
  }
  out.op = NcclTestsOp::all_reduce;
  out.candidates = {out.op};
  out.reason = fmt::format("a reduction with count = size / type size and busbw / algbw {:.3f} (2(n-1)/n)",
                           ratio->value);
  return out;
}

}  // namespace commstack::fit
