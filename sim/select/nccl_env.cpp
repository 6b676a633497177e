#include "sim/select/nccl_env.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack::select {

EnableMatrix::EnableMatrix() {
  for (int f = 0; f < kNumFuncs; ++f) {
    for (int a = 0; a < kNumAlgos; ++a) algo[f][a] = 1;
    for (int p = 0; p < kNumProtos; ++p) proto[f][p] = p == idx(Proto::ll128) ? 2 : 1;
  }
}

namespace {
std::vector<std::string_view> split_nonempty(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    auto end = s.find(sep, start);
    std::string_view tok = s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!tok.empty()) out.push_back(tok);  // strtok skips empty tokens
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}
}  // namespace

void apply_nccl_list(std::string_view value, std::string_view var, bool is_algo, EnableMatrix& m) {
  auto entries = split_nonempty(value, ';');
  if (entries.empty()) throw InputError(fmt::format("{}: empty value; expected e.g. \"{}\"", var, is_algo ? "Ring,Tree" : "LL,Simple"));
  bool first = true;
  for (std::string_view entry : entries) {
    auto parts = split_nonempty(entry, ':');
    std::string_view prefix, list;
    if (parts.size() >= 2) {
      prefix = parts[0];
      list = parts[1];
    } else if (parts.size() == 1) {
      if (!first || entry.find(':') != std::string_view::npos) {
        if (entry.find(':') != std::string_view::npos)
          throw InputError(fmt::format("{}: entry '{}' has a function prefix but no list", var, entry));
        throw InputError(fmt::format("{}: all entries except the first must have a function prefix (\"allreduce:...\"), got '{}'",
                                     var, entry));
      }
      list = parts[0];
    } else {
      throw InputError(fmt::format("{}: empty entry", var));
    }
    first = false;
    int set = 1, unset = 0;
    if (!list.empty() && list.front() == '^') {
      set = 0;
      unset = 1;
      list.remove_prefix(1);
    }
    bool found_prefix = false;
    for (Func f : kAllFuncs) {
      if (!prefix.empty()) {
        Func pf;
        if (!parse_func(prefix, pf) || pf != f) continue;
      }
      found_prefix = true;
      const int n = is_algo ? kNumAlgos : kNumProtos;
      for (int e = 0; e < n; ++e) (is_algo ? m.algo[idx(f)][e] : m.proto[idx(f)][e]) = unset;
      for (std::string_view elem : split_nonempty(list, ',')) {
        if (is_algo) {
          Algo a;
          if (!parse_algo(elem, a))
            throw InputError(fmt::format("{}: unknown algorithm '{}'; expected Tree, Ring, CollnetDirect, CollnetChain, NVLS, NVLSTree or PAT",
                                         var, elem));
          m.algo[idx(f)][idx(a)] = set;
        } else {
          Proto p;
          if (!parse_proto(elem, p)) throw InputError(fmt::format("{}: unknown protocol '{}'; expected LL, LL128 or Simple", var, elem));
          m.proto[idx(f)][idx(p)] = set;
        }
      }
    }
    if (!found_prefix)
      throw InputError(fmt::format("{}: unknown function prefix '{}'; expected Broadcast, Reduce, AllGather, ReduceScatter or AllReduce",
                                   var, prefix));
  }
}

int bound_by_ctas(int channels, const NcclEnv& env) {
  if (env.max_ctas > 0) channels = std::min(channels, env.max_ctas);
  if (env.min_ctas > 0) channels = std::max(channels, env.min_ctas);
  return channels;
}

bool p2p_net_ll_buffers(const NcclEnv& env) {
  // src/transport/net.cc sendSetup: conn.shared = graph || connIndex == 0 ? 0 :
  // NET_SHARED_BUFFERS != -2 ? NET_SHARED_BUFFERS : 1; an unshared connection gets buffs[p] for
  // every protocol, a shared one buffs[NCCL_PROTO_LL] only if allocP2pNetLLBuffers.
  return env.alloc_p2p_net_ll_buffers || env.net_shared_buffers == 0;
}

void validate(const NcclEnv& env) {
  if (env.min_ctas < 0 || env.min_ctas > 64) throw InputError(fmt::format("NCCL_MIN_CTAS: expected 1..64, got {}", env.min_ctas));
  if (env.max_ctas < 0 || env.max_ctas > 64) throw InputError(fmt::format("NCCL_MAX_CTAS: expected 1..64, got {}", env.max_ctas));
  if (env.min_ctas > 0 && env.max_ctas > 0 && env.min_ctas > env.max_ctas)
    throw InputError(fmt::format("NCCL_MIN_CTAS ({}) is larger than NCCL_MAX_CTAS ({})", env.min_ctas, env.max_ctas));
  if (env.pat_enable < 0 || env.pat_enable > 2) throw InputError("NCCL_PAT_ENABLE: expected 0, 1 or 2");
  if (env.mnnvl_enable < 0 || env.mnnvl_enable > 2) throw InputError("NCCL_MNNVL_ENABLE: expected 0, 1 or 2");
  // NCCL takes any positive size; a chunk beyond the 1 GiB calls it would cut is a typo.
  constexpr std::int64_t kMaxChunk = std::int64_t{1} << 30;
  if (env.nvls_chunksize < 0 || env.nvls_chunksize > kMaxChunk)
    throw InputError(
        fmt::format("NCCL_NVLS_CHUNKSIZE: expected 1..{} bytes, got {}", kMaxChunk, env.nvls_chunksize));
  if (env.nvlstree_max_chunksize != -2 &&
      (env.nvlstree_max_chunksize < 1 || env.nvlstree_max_chunksize > kMaxChunk))
    throw InputError(fmt::format("NCCL_NVLSTREE_MAX_CHUNKSIZE: expected 1..{} bytes, got {}", kMaxChunk,
                                 env.nvlstree_max_chunksize));
  if (env.net_overhead_ns && (*env.net_overhead_ns < 0 || *env.net_overhead_ns > 1e9))
    throw InputError("NCCL_NET_OVERHEAD: expected a non-negative number of nanoseconds");
  if (env.algo) {
    EnableMatrix m;
    apply_nccl_list(*env.algo, "NCCL_ALGO", true, m);
  }
  if (env.proto) {
    EnableMatrix m;
    apply_nccl_list(*env.proto, "NCCL_PROTO", false, m);
  }
}

}  // namespace commstack::select
