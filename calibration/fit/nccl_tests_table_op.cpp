#include "calibration/fit/nccl_tests_table_op.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
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

// What the rows' size, count, type, redop and root columns say, the same on every row; `failed`
// names the first inconsistency.
struct ColumnFacts {
  std::optional<std::uint64_t> per_rank;  // size / (count x type size)
  bool reducing = false, rooted = false, redop_seen = false, root_column = false;
  std::string failed;
};

ColumnFacts column_facts(const NcclTestsResult& r) {
  ColumnFacts f;
  for (const auto& row : r.rows) {
    if (!row.count || *row.count == 0 || row.size_bytes == 0) continue;
    const auto tb = nccl_tests_type_bytes(row.type);
    if (!tb) {
      f.failed = fmt::format("type '{}' has no known element size", row.type);
      return f;
    }
    // A count past 2^64 / type size (a mangled file) would wrap the product, to 0 at worst.
    if (*row.count > row.size_bytes / *tb) {
      f.failed = fmt::format("count {} x type size {} exceeds the size {}", *row.count, *tb, row.size_bytes);
      return f;
    }
    const std::uint64_t elem_bytes = *row.count * *tb;
    if (row.size_bytes % elem_bytes != 0) {
      f.failed =
          fmt::format("size {} is not a multiple of count x type size ({})", row.size_bytes, elem_bytes);
      return f;
    }
    const std::uint64_t k = row.size_bytes / elem_bytes;
    if (f.per_rank && *f.per_rank != k) {
      f.failed = "size / (count x type size) differs between rows";
      return f;
    }
    f.per_rank = k;
    if (!row.redop.empty()) {
      const bool red = row.redop != "none";
      if (f.redop_seen && red != f.reducing) {
        f.failed = "the redop column mixes 'none' and a reduction";
        return f;
      }
      f.reducing = red, f.redop_seen = true;
    }
    if (row.root) f.root_column = true;
    if (row.root && *row.root >= 0) f.rooted = true;
  }
  if (f.failed.empty() && (!f.per_rank || !f.redop_seen))
    f.failed = "no row with a size, a count, a type and a redop";
  return f;
}

// A rooted op (a root >= 0): reduce or broadcast.
TableOpInference rooted_op(const ColumnFacts& f, const std::optional<BusRatio>& ratio) {
  TableOpInference out;
  const std::uint64_t k = *f.per_rank;
  if (k != 1) {
    out.reason = fmt::format("a rooted op with size / (count x type size) = {} (gather or scatter?)", k);
    return out;
  }
  if (ratio && !near(*ratio, 1.0)) {
    out.reason = "a rooted op whose busbw is not its algbw";
    return out;
  }
  out.op = f.reducing ? NcclTestsOp::reduce : NcclTestsOp::broadcast;
  out.candidates = {out.op};
  out.reason =
      fmt::format("redop '{}' with a root and count = size / type size", f.reducing ? "a reduction" : "none");
  return out;
}

// count = size / (ranks x type size): reduce_scatter, or one of the ops that print redop 'none'.
TableOpInference sharded_op(const ColumnFacts& f, const std::optional<BusRatio>& ratio, int n) {
  TableOpInference out;
  if (ratio && n > 0 && !near(*ratio, (n - 1.0) / n)) {
    out.reason = fmt::format("busbw / algbw {:.4f} is not (n-1)/n for n = {}", ratio->value, n);
    return out;
  }
  if (!f.reducing) {
    out.reason = "all_gather or alltoall: both print redop 'none' and count = size / (ranks x type size)";
    out.candidates = {NcclTestsOp::all_gather, NcclTestsOp::alltoall, NcclTestsOp::alltoallv,
                      NcclTestsOp::hypercube};
    // Without a root column a gather or scatter prints the same.
    if (!f.root_column)
      out.candidates.insert(out.candidates.end(), {NcclTestsOp::gather, NcclTestsOp::scatter});
    return out;
  }
  out.op = NcclTestsOp::reduce_scatter;
  out.candidates = {out.op};
  out.reason = "a reduction with count = size / (ranks x type size)";
  return out;
}

// count = size / type size, not rooted: all_reduce (busbw = 2(n-1)/n algbw) or sendrecv (busbw =
// algbw), both with a reduction in the redop column; the bus factor tells them apart from 3 ranks on.
TableOpInference whole_op(const ColumnFacts& f, const std::optional<BusRatio>& ratio, int n) {
  TableOpInference out;
  if (!f.reducing) {
    out.reason = "redop 'none' with count = size / type size and no root: not an op the columns identify";
    return out;
  }
  // Without a root column a reduce prints the same (its bus factor is 1, as sendrecv's).
  out.candidates = {NcclTestsOp::all_reduce, NcclTestsOp::sendrecv};
  if (!f.root_column) out.candidates.push_back(NcclTestsOp::reduce);
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
  if (ratio->value < 1.0 || ratio->value >= 2.0 || (n > 0 && !near(*ratio, 2.0 * (n - 1.0) / n))) {
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

}  // namespace

TableOpInference op_from_table(const NcclTestsResult& r) {
  const ColumnFacts f = column_facts(r);
  if (!f.failed.empty()) {
    TableOpInference out;
    out.reason = f.failed;
    return out;
  }
  const std::uint64_t k = *f.per_rank;
  const int ranks = r.ranks_complete && !r.elided ? r.n_ranks : 0;  // 0: the rank lines do not say
  if (ranks > 0 && k != 1 && k != static_cast<std::uint64_t>(ranks)) {
    TableOpInference out;
    out.reason = fmt::format("size / (count x type size) = {} is neither 1 nor the {} ranks", k, ranks);
    return out;
  }
  const auto ratio = bus_ratio(r);
  const int n = k > 1 ? static_cast<int>(k) : ranks;  // ranks, where known
  if (f.rooted) return rooted_op(f, ratio);
  if (k > 1) return sharded_op(f, ratio, n);
  return whole_op(f, ratio, n);
}

namespace {

bool sharded(NcclTestsOp op) {
  return op == NcclTestsOp::all_gather || op == NcclTestsOp::reduce_scatter || op == NcclTestsOp::alltoall;
}

// nccl-tests' bus factor of op on n ranks (src/*.cu *GetBw), nullopt where it does not depend on n.
std::optional<double> bus_factor(NcclTestsOp op, int n) {
  if (op == NcclTestsOp::all_reduce) return 2.0 * (n - 1.0) / n;
  if (sharded(op)) return (n - 1.0) / n;
  return std::nullopt;
}

// The n whose bus factor is the printed ratio (nearest integer), nullopt outside the factor's range.
std::optional<int> ranks_of_ratio(NcclTestsOp op, double ratio) {
  const double top = op == NcclTestsOp::all_reduce ? 2.0 : 1.0;  // the factor's limit as n grows
  if (ratio < top / 2.0 - 1e-3 || ratio >= top) return std::nullopt;
  const double n = top / (top - ratio);
  if (!(n < 1e7)) return std::nullopt;
  return std::max(2, static_cast<int>(std::lround(n)));
}

}  // namespace

std::optional<TableRanks> ranks_from_table(const NcclTestsResult& r, NcclTestsOp op) {
  if (sharded(op)) {
    const ColumnFacts f = column_facts(r);
    if (f.failed.empty() && f.per_rank && *f.per_rank > 1 && *f.per_rank < (1U << 30))
      return TableRanks{static_cast<int>(*f.per_rank),
                        fmt::format("size / (count x type size) = {} in every row (nccl-tests prints count = "
                                    "size / (ranks x type size) for {})",
                                    *f.per_rank, to_string(op))};
  }
  const auto ratio = bus_ratio(r);
  if (!ratio || !bus_factor(op, 2)) return std::nullopt;
  const auto n = ranks_of_ratio(op, ratio->value);
  if (!n || !near(*ratio, *bus_factor(op, *n))) return std::nullopt;
  return TableRanks{*n,
                    fmt::format("busbw / algbw = {:.4f}, nccl-tests' bus factor {} for n = {}", ratio->value,
                                op == NcclTestsOp::all_reduce ? "2(n-1)/n" : "(n-1)/n", *n)};
}

std::optional<std::string> table_ranks_conflict(const NcclTestsResult& r, NcclTestsOp op, int n) {
  if (n < 1) return std::nullopt;
  if (sharded(op)) {
    const ColumnFacts f = column_facts(r);
    if (f.failed.empty() && f.per_rank && *f.per_rank > 1 && *f.per_rank != static_cast<std::uint64_t>(n))
      return fmt::format(
          "its rows have size / (count x type size) = {}, where nccl-tests prints count = size / "
          "(ranks x type size) for {}: {} ranks, not {}",
          *f.per_rank, to_string(op), *f.per_rank, n);
  }
  const auto ratio = bus_ratio(r);
  const auto factor = bus_factor(op, n);
  if (!ratio || !factor || near(*ratio, *factor)) return std::nullopt;
  const auto m = ranks_of_ratio(op, ratio->value);
  const char* formula = op == NcclTestsOp::all_reduce ? "2(n-1)/n" : "(n-1)/n";
  return fmt::format(
      "its busbw / algbw is {:.4f}, where nccl-tests' bus factor for {} is {} = {:.4f} on {} ranks{}",
      ratio->value, to_string(op), formula, *factor, n,
      m && near(*ratio, *bus_factor(op, *m)) ? fmt::format(" and {:.4f} on {}", *bus_factor(op, *m), *m)
                                             : std::string());
}

}  // namespace commstack::fit
