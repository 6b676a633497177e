#pragma once
// The collective an nccl-tests result table was measured with, read from the table itself, for
// output that names it nowhere else (older nccl-tests print no "Collective test starting" line,
// and logs pasted into issues lose their file names). Rules in docs/measurement-formats.md.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "calibration/fit/nccl_tests.hpp"

namespace commstack::fit {

// Bytes per element of one of nccl-tests' type names (src/common.cu test_typenames, old and new);
// nullopt for a word that is not one.
std::optional<std::uint64_t> nccl_tests_type_bytes(std::string_view type);

struct TableOpInference {
  NcclTestsOp op = NcclTestsOp::unknown;
  // Why: the columns that decided it, or why they cannot ("all_gather or alltoall: ...").
  std::string reason;
  // The ops the columns allow: op alone when they decide, the ops they cannot tell apart when they
  // narrow it down (all_gather / alltoall), empty when they say nothing.
  std::vector<NcclTestsOp> candidates;
};

// Reads the redop and root columns, the ratio size / (count x type size) (1 for all_reduce,
// sendrecv, broadcast and reduce; the rank count for reduce_scatter, all_gather and alltoall) and
// the printed busbw / algbw ratio (the op's bus factor). Gives unknown when the columns are
// missing or disagree, or when they fit more than one op (all_gather and alltoall print the same
// columns; so do all_reduce and sendrecv on 2 ranks).
TableOpInference op_from_table(const NcclTestsResult& result);

// The rank count the table's own numbers give for `op`, where they give one: size / (count x type
// size) for all_gather, reduce_scatter and alltoall (count = size / (ranks x type size)), else the
// printed busbw / algbw, nccl-tests' bus factor (2(n-1)/n for all_reduce, (n-1)/n for those three;
// broadcast, reduce and sendrecv print 1 whatever n). `why` names the columns and their numbers.
struct TableRanks {
  int ranks = 0;
  std::string why;
};
std::optional<TableRanks> ranks_from_table(const NcclTestsResult& result, NcclTestsOp op);

// Why n ranks cannot have printed this table for `op` (the columns above give another count, beyond
// the rounding of the printed numbers); nullopt when they fit or the table cannot tell.
std::optional<std::string> table_ranks_conflict(const NcclTestsResult& result, NcclTestsOp op, int n);

}  // namespace commstack::fit
