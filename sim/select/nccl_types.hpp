#pragma once
// Vocabulary of NCCL's tuning model, in NCCL's own index order so tables read like the source:
// functions (collectives NCCL tunes), algorithms, protocols, path types and CPU kinds.
#include <array>
#include <string>
#include <string_view>

namespace commstack::select {

enum class Func { broadcast, reduce, all_gather, reduce_scatter, all_reduce };
enum class Algo { tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat };
enum class Proto { ll, ll128, simple };
inline constexpr int kNumFuncs = 5;
inline constexpr int kNumAlgos = 7;
inline constexpr int kNumProtos = 3;
inline constexpr std::array<Func, kNumFuncs> kAllFuncs{Func::broadcast, Func::reduce, Func::all_gather,
                                                      Func::reduce_scatter, Func::all_reduce};
inline constexpr std::array<Algo, kNumAlgos> kAllAlgos{Algo::tree,  Algo::ring,      Algo::collnet_direct, Algo::collnet_chain,
                                                      Algo::nvls,  Algo::nvls_tree, Algo::pat};
inline constexpr std::array<Proto, kNumProtos> kAllProtos{Proto::ll, Proto::ll128, Proto::simple};

// Path types between devices, ordered from closest to farthest as in NCCL's graph.h.
enum class PathType { loc, nvl, nvb, c2c, pix, pxb, p2c, pxn, phb, sys, net, dis };

enum class CpuArch { x86, power, arm, other };
enum class CpuVendor { intel, amd, zhaoxin, mixed, other };

constexpr int idx(Func f) { return static_cast<int>(f); }
constexpr int idx(Algo a) { return static_cast<int>(a); }
constexpr int idx(Proto p) { return static_cast<int>(p); }

// NCCL's printed names: "AllReduce", "Tree"/"NVLSTree", "LL128"/"Simple".
std::string to_string(Func f);
std::string to_string(Algo a);
std::string to_string(Proto p);
std::string to_string(PathType t);
// Normalised lower-case names used by the log parser: "all_reduce", "nvls_tree", "ll128".
std::string key(Func f);
std::string key(Algo a);
std::string key(Proto p);

// Case-insensitive parsers accepting NCCL's spellings (with or without '_': "NVLS_TREE",
// "NVLSTree", "CollnetDirect"). Return false when the name is unknown.
bool parse_func(std::string_view name, Func& out);
bool parse_algo(std::string_view name, Algo& out);
bool parse_proto(std::string_view name, Proto& out);
bool parse_path_type(std::string_view name, PathType& out);

}  // namespace commstack::select
