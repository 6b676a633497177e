#pragma once
// What the lines around an nccl-tests result table say about the run: NCCL's INFO lines (the
// environment NCCL read, the communicator's channel counts and node shape) and the launcher's
// command line (NCCL_* settings given as VAR=value). Internal to calibration/fit.
#include <map>
#include <string>
#include <string_view>

#include "calibration/fit/nccl_tests.hpp"

namespace commstack::fit::detail {

// "host:pid:tid [0] NCCL INFO NCCL_ALGO set by environment to Ring" (NCCL's ncclGetEnv report).
void note_env_from_info(std::string_view body, int line, std::map<std::string, NcclTestsEnvSetting>& env);

// "NCCL INFO 16 coll channels, 16 collnet channels, 16 nvls channels, 16 p2p channels, 2 p2p channels
// per peer": the communicator's channel counts (the first such line). A coll or nvls count NCCL
// cannot have printed throws InputError naming origin:line and the field.
void note_channels_from_info(std::string_view body, int line, std::string_view origin, NcclTestsResult& res);

// "NCCL INFO comm 0x55d0 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 0" (src/init.cc).
void note_comm_from_info(std::string_view body, int line, NcclTestsResult& res);

// VAR=value words of a launcher line: "mpirun -x NCCL_ALGO=Ring ...", "srun --export=ALL,NCCL_PROTO=Simple",
// "NCCL_MIN_CTAS=24 ./all_reduce_perf", "export NCCL_ALGO=Tree".
void note_env_from_command(std::string_view body, int line, std::map<std::string, NcclTestsEnvSetting>& env);

}  // namespace commstack::fit::detail
