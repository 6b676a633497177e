#include "calibration/fit/nccl_tests_info_lines.hpp"

#include <charconv>

#include <fmt/format.h>

#include "calibration/fit/text_lines.hpp"

namespace commstack::fit::detail {

namespace {

bool is_env_name(std::string_view name) {
  if (name.size() <= 5 || name.substr(0, 5) != "NCCL_") return false;
  for (char c : name)
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

std::string_view unquote(std::string_view v) {
  while (!v.empty() && (v.front() == '"' || v.front() == '\'')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == '"' || v.back() == '\'' || v.back() == ';')) v.remove_suffix(1);
  return v;
}

}  // namespace

// "host:pid:tid [0] NCCL INFO NCCL_ALGO set by environment to Ring" (NCCL's ncclGetEnv report).
void note_env_from_info(std::string_view body, int line, std::map<std::string, NcclTestsEnvSetting>& env) {
  constexpr std::string_view kSet = " set by environment to ";
  const auto at = body.find(kSet);
  if (at == std::string_view::npos) return;
  const auto name_toks = split_ws(body.substr(0, at));
  const auto value_toks = split_ws(body.substr(at + kSet.size()));
  if (name_toks.empty() || value_toks.empty() || !is_env_name(name_toks.back())) return;
  std::string_view value = value_toks[0];
  if (value_toks.size() == 1 && value.size() > 1 && value.back() == '.')
    value.remove_suffix(1);  // "... to 2."
  env.try_emplace(std::string(name_toks.back()), NcclTestsEnvSetting{std::string(value), line});
}

// "NCCL INFO 16 coll channels, 16 collnet channels, 16 nvls channels, 16 p2p channels, 2 p2p channels
// per peer": the communicator's channel counts (the first line printed). The coll and nvls counts
// feed the prediction, so one NCCL cannot have printed (not a whole number, coll outside 1-64, nvls
// outside 0-64: "0 nvls channels" is NCCL without NVLS) is an error naming the line and field.
void note_channels_from_info(std::string_view body, int line, std::string_view origin, NcclTestsResult& res) {
  if (res.coll_channels || body.find(" coll channels") == std::string_view::npos) return;
  const auto toks = split_ws(body);
  for (std::size_t i = 0; i + 2 < toks.size(); ++i) {
    if (toks[i + 2].substr(0, 8) != "channels") continue;
    const bool coll = toks[i + 1] == "coll", nvls = toks[i + 1] == "nvls";
    if (!coll && !nvls) continue;
    const int lo = coll ? 1 : 0;
    int v = 0;
    const auto [ptr, ec] = std::from_chars(toks[i].data(), toks[i].data() + toks[i].size(), v);
    if (ec != std::errc{} || ptr != toks[i].data() + toks[i].size() || v < lo || v > 64)
      fail(origin, line,
           fmt::format(
               "NCCL's channel line: '{} {} channels' is not a channel count NCCL prints; expected {}-64",
               printable(toks[i]), toks[i + 1], lo));
    if (coll) res.coll_channels = v;
    if (nvls) res.nvls_channels = v;
  }
  if (res.coll_channels) res.channels_line = line;
}

// "NCCL INFO comm 0x55d0 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 0" (src/init.cc;
// releases before MNNVL print no such field and leave both unset).
void note_comm_from_info(std::string_view body, int line, NcclTestsResult& res) {
  if (res.comm_mnnvl || body.find(" MNNVL ") == std::string_view::npos) return;
  const auto toks = split_ws(body);
  std::optional<int> mnnvl, nodes;
  for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
    std::int64_t v = 0;
    if (!to_int64(toks[i + 1], v)) continue;
    if (toks[i] == "MNNVL" && (v == 0 || v == 1)) mnnvl = static_cast<int>(v);
    if (toks[i] == "nNodes" && v >= 1 && v <= (1 << 24)) nodes = static_cast<int>(v);
  }
  if (!mnnvl) return;
  res.comm_mnnvl = mnnvl;
  res.comm_nodes = nodes;
  res.comm_line = line;
}

// VAR=value words of a launcher line: "mpirun -x NCCL_ALGO=Ring ...", "srun --export=ALL,NCCL_PROTO=Simple",
// "NCCL_MIN_CTAS=24 ./all_reduce_perf", "export NCCL_ALGO=Tree".
void note_env_from_command(std::string_view body, int line, std::map<std::string, NcclTestsEnvSetting>& env) {
  for (auto tok : split_ws(body)) {
    std::size_t pos = 0;
    while (pos < tok.size()) {
      const auto start = tok.find("NCCL_", pos);
      if (start == std::string_view::npos) break;
      // The name must start the word or follow '=' / ',' (--export=A,NCCL_X=1, --env=NCCL_X=1).
      if (start > 0 && tok[start - 1] != ',' && tok[start - 1] != '=' && tok[start - 1] != '"' &&
          tok[start - 1] != '\'') {
        pos = start + 5;
        continue;
      }
      const auto eq = tok.find('=', start);
      const auto comma = tok.find(',', start);
      if (eq == std::string_view::npos || (comma != std::string_view::npos && comma < eq)) {
        pos = start + 5;
        continue;
      }
      const std::string_view name = tok.substr(start, eq - start);
      const auto end = comma == std::string_view::npos ? tok.size() : comma;
      const std::string_view value = unquote(tok.substr(eq + 1, end - eq - 1));
      if (is_env_name(name) && !value.empty())
        env.try_emplace(std::string(name), NcclTestsEnvSetting{std::string(value), line});
      pos = end;
    }
  }
}

}  // namespace commstack::fit::detail
