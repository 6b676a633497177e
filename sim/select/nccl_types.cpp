#include "sim/select/nccl_types.hpp"

#include <cctype>

namespace commstack::select {

namespace {
std::string squash(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '_' && c != '-' && c != ' ') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace

std::string to_string(Func f) {
  static const char* n[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
  return n[idx(f)];
}
std::string to_string(Algo a) {
  static const char* n[] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
  return n[idx(a)];
}
std::string to_string(Proto p) {
  static const char* n[] = {"LL", "LL128", "Simple"};
  return n[idx(p)];
}
std::string to_string(PathType t) {
  static const char* n[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
  return n[static_cast<int>(t)];
}
std::string key(Func f) {
  static const char* n[] = {"broadcast", "reduce", "all_gather", "reduce_scatter", "all_reduce"};
  return n[idx(f)];
}
std::string key(Algo a) {
  static const char* n[] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
  return n[idx(a)];
}
std::string key(Proto p) {
  static const char* n[] = {"ll", "ll128", "simple"};
  return n[idx(p)];
}

bool parse_func(std::string_view name, Func& out) {
  std::string s = squash(name);
  for (Func f : kAllFuncs)
    if (s == squash(to_string(f))) return out = f, true;
  return false;
}
bool parse_algo(std::string_view name, Algo& out) {
  std::string s = squash(name);
  for (Algo a : kAllAlgos)
    if (s == squash(to_string(a))) return out = a, true;
  return false;
}
bool parse_proto(std::string_view name, Proto& out) {
  std::string s = squash(name);
  for (Proto p : kAllProtos)
    if (s == squash(to_string(p))) return out = p, true;
  return false;
}
bool parse_path_type(std::string_view name, PathType& out) {
  std::string s = squash(name);
  for (int i = 0; i <= static_cast<int>(PathType::dis); ++i)
    if (s == squash(to_string(static_cast<PathType>(i)))) return out = static_cast<PathType>(i), true;
  return false;
}

}  // namespace commstack::select
