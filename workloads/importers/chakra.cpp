#include "workloads/importers/chakra.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/units.hpp"
#include "workloads/importers/json_stream.hpp"
#include "workloads/importers/trace_graph.hpp"

namespace commstack::workloads::importers {
namespace {

using nlohmann::json;

// Chakra's NodeType and CollectiveCommType enums (schema/protobuf/et_def.proto).
enum NodeType { kMetadata = 1, kComp = 4, kSend = 5, kRecv = 6, kColl = 7 };
// CollectiveCommType runs from ALL_REDUCE (0) to BARRIER (9).
constexpr std::int64_t kMaxCommType = 9;

std::optional<Collective> collective_of(std::int64_t comm_type) {
  switch (comm_type) {
    case 0: return Collective::all_reduce;
    case 1: return Collective::reduce;
    case 2: return Collective::all_gather;
    case 5: return Collective::broadcast;
    case 6: return Collective::all_to_all;
    case 7: return Collective::reduce_scatter;
    default: return std::nullopt;  // gather, scatter, barrier...: not modelled
  }
}

struct Node {
  std::int64_t id = -1;
  std::string name;
  int type = 0;
  bool cpu = false;
  double runtime_us = 0;
  bool has_runtime = false;
  std::vector<std::int64_t> deps;
  std::optional<std::int64_t> comm_type, comm_size, comm_src, comm_dst, comm_tag;
};

// An optional integer field; present with another type (or a fraction) is an error naming it.
std::optional<std::int64_t> opt_int(const json& o, const char* key, std::int64_t id) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return std::nullopt;
  if (!(it->is_number_integer() || it->is_number_unsigned()) ||
      (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
    throw InputError(fmt::format("node Id {}: \"{}\" is {}: expected an integer", id, key, it->dump()));
  return it->get<std::int64_t>();
}

// The same, and it may not be negative (sizes, ranks, tags).
std::optional<std::int64_t> opt_count(const json& o, const char* key, std::int64_t id) {
  auto v = opt_int(o, key, id);
  if (v && *v < 0)
    throw InputError(fmt::format("node Id {}: \"{}\" is {}: expected a value >= 0", id, key, *v));
  return v;
}

int rank_of(const std::string& path, std::size_t index, std::vector<std::string>& warnings) {
  static const std::regex dotted(R"(\.(\d+)\.json)"), named(R"(rank[-_.]?(\d+))", std::regex::icase);
  const std::string base = path.substr(path.find_last_of('/') + 1);
  std::smatch m;
  if ((std::regex_search(base, m, dotted) || std::regex_search(base, m, named)) && m[1].length() < 9) return std::stoi(m[1]);
  warnings.push_back(fmt::format("{}: no rank in the file name (chakra.<rank>.json); taken as rank {}", path, index));
  return static_cast<int>(index);
}

// One workload_graph node as the importer keeps it. InputError (the stream adds the file and the
// element) for a node without an integer Id, a NodeType outside Chakra's enum, a runtime that is
// not a duration, a dependency that is not a node Id, or a negative size or peer: a trace that
// says something the importer cannot read is refused rather than replayed on a guess.
Node read_node(const json& e, std::int64_t index) {
  Node n;
  auto id_it = e.find("Id");
  if (id_it == e.end() || !(id_it->is_number_integer() || id_it->is_number_unsigned()))
    throw InputError(fmt::format("node {} has no integer \"Id\"", index));
  n.id = id_it->get<std::int64_t>();
  auto type = opt_int(e, "NodeType", n.id);
  if (!type) throw InputError(fmt::format("node Id {} has no \"NodeType\"", n.id));
  if (*type < kMetadata || *type > kColl)
    throw InputError(
        fmt::format("node Id {}: \"NodeType\" is {}: expected 1-7 (Chakra's NodeType: 1 metadata, "
                    "2 memory load, 3 memory store, 4 compute, 5 send, 6 recv, 7 collective)",
                    n.id, *type));
  n.type = static_cast<int>(*type);
  if (auto it = e.find("Name"); it != e.end() && it->is_string()) n.name = it->get<std::string>();
  if (auto it = e.find("is_cpu_op"); it != e.end() && !it->is_null()) {
    if (!it->is_boolean())
      throw InputError(
          fmt::format("node Id {}: \"is_cpu_op\" is {}: expected true or false", n.id, it->dump()));
    n.cpu = it->get<bool>();
  }
  if (auto it = e.find("runtime"); it != e.end() && !it->is_null()) {
    // Microseconds; the ceiling (about 31 years) keeps the sum of a rank's ops finite.
    if (!it->is_number() || !(it->get<double>() >= 0) || it->get<double>() >= 1e15)
      throw InputError(
          fmt::format("node Id {}: \"runtime\" is {}: expected microseconds >= 0", n.id, it->dump()));
    n.runtime_us = it->get<double>();
    n.has_runtime = true;
  }
  for (const char* key : {"data_deps", "ctrlDeps", "ctrl_deps"}) {
    auto it = e.find(key);
    if (it == e.end() || it->is_null()) continue;
    const json& d = *it;
    const auto take = [&](const json& x) {
      if (!x.is_number_integer() && !x.is_number_unsigned())
        throw InputError(
            fmt::format("node Id {}: \"{}\" holds {}: expected node Ids (integers)", n.id, key, x.dump()));
      n.deps.push_back(x.get<std::int64_t>());
    };
    if (d.is_array()) {
      for (const auto& x : d) take(x);
    } else {
      take(d);
    }
  }
  n.comm_type = opt_int(e, "comm_type", n.id);
  if (n.comm_type && (*n.comm_type < 0 || *n.comm_type > kMaxCommType))
    throw InputError(
        fmt::format("node Id {}: \"comm_type\" is {}: expected 0-{} (Chakra's CollectiveCommType)", n.id,
                    *n.comm_type, kMaxCommType));
  n.comm_size = opt_count(e, "comm_size", n.id);
  n.comm_src = opt_count(e, "comm_src", n.id);
  n.comm_dst = opt_count(e, "comm_dst", n.id);
  n.comm_tag = opt_int(e, "comm_tag", n.id);
  return n;
}

struct FileNodes {
  std::string path;
  int rank = 0;
  std::vector<Node> nodes;
};

// Every file's nodes, in rank order; `world` grows to the files' ngpus and ranks.
std::vector<FileNodes> read_files(const std::vector<std::string>& files, int& world,
                                  std::vector<std::string>& warnings) {
  std::vector<FileNodes> all;
  for (std::size_t k = 0; k < files.size(); ++k) {
    FileNodes fn;
    fn.path = files[k];
    fn.rank = rank_of(files[k], k, warnings);
    long long bad = 0;
    StreamCallbacks cb;
    cb.element = [&](json&& e, std::int64_t index) {
      if (!e.is_object()) {
        ++bad;
        return;
      }
      fn.nodes.push_back(read_node(e, index));
    };
    std::string bad_ngpus;  // thrown after the stream, which would blame the array element
    int ngpus = 0;          // the file's own "ngpus", 0 when it has none
    cb.member = [&](const std::string& key, json&& v) {
      if (key != "ngpus") return;
      if ((v.is_number_integer() || v.is_number_unsigned()) && v.get<long long>() > 0 &&
          v.get<long long>() <= kMaxGpus) {
        ngpus = v.get<int>();
        world = std::max(world, ngpus);
      } else {
        bad_ngpus = v.dump();
      }
    };
    stream_json_file(fn.path, "workload_graph", cb);
    if (!bad_ngpus.empty())
      throw InputError(fmt::format("{}: \"ngpus\" is {}: expected the number of GPUs, 1-{}", fn.path,
                                   bad_ngpus.substr(0, 40), kMaxGpus));
    // As Kineto's rank >= world_size: the file says the job has ngpus GPUs, so its rank is one of them.
    if (ngpus > 0 && fn.rank >= ngpus)
      throw InputError(
          fmt::format("{}: rank {} is not below its \"ngpus\" {}; expected a rank 0-{} (the file's "
                      "rank is the N of chakra.N.json)",
                      fn.path, fn.rank, ngpus, ngpus - 1));
    if (bad > 0)
      warnings.push_back(
          fmt::format("{}: {} workload_graph entries that are not objects skipped", fn.path, bad));
    if (fn.nodes.empty()) throw InputError(fmt::format("{}: \"workload_graph\" has no nodes", fn.path));
    world = std::max(world, fn.rank + 1);
    all.push_back(std::move(fn));
  }
  std::sort(all.begin(), all.end(), [](const FileNodes& a, const FileNodes& b) { return a.rank < b.rank; });
  for (std::size_t i = 1; i < all.size(); ++i) {
    if (all[i].rank == all[i - 1].rank) throw InputError(fmt::format("{} and {} are both rank {}", all[i - 1].path, all[i].path, all[i].rank));
  }
  return all;
}

// One rank's nodes as ops: CPU ops on lane 0, GPU kernels on lane 1, communication on lane 2,
// each lane in node order; then the nodes' own dependencies.
void build_rank(FileNodes& fn, int world, const std::vector<int>& world_ranks, RankBuilder& rb,
                std::vector<std::string>& warnings) {
  std::stable_sort(fn.nodes.begin(), fn.nodes.end(),
                   [](const Node& a, const Node& b) { return a.id < b.id; });
  std::unordered_map<std::int64_t, int> local;
  for (std::size_t i = 1; i < fn.nodes.size(); ++i) {
    if (fn.nodes[i].id == fn.nodes[i - 1].id)
      throw InputError(fmt::format("{}: node Id {} appears twice", fn.path, fn.nodes[i].id));
  }
  int prev_cpu = -1, prev_gpu = -1, prev_comm = -1;
  long long missing_deps = 0, kept = 0, no_runtime = 0;
  // Pass 1: ops (deps to nodes defined later are added in pass 2).
  std::vector<int> op_of(fn.nodes.size(), -1);
  for (std::size_t i = 0; i < fn.nodes.size(); ++i) {
    const Node& n = fn.nodes[i];
    if (!n.has_runtime) ++no_runtime;
    const double dur = n.runtime_us * 1e-6;
    int id = -1;
    const bool comm_node = n.type == kColl || n.type == kSend || n.type == kRecv;
    if (n.cpu) {
      id = rb.host(n.name, 0, dur, 0, prev_cpu);
      prev_cpu = id;
    } else if (!comm_node) {
      id = rb.gpu(n.name, 0, dur, 1, prev_gpu >= 0 ? std::vector<int>{prev_gpu} : std::vector<int>{}, false);
      prev_gpu = id;
    } else {
      std::vector<int> deps;
      if (prev_comm >= 0) deps.push_back(prev_comm);
      const auto coll = n.comm_type ? collective_of(*n.comm_type) : std::nullopt;
      for (const auto& [key, peer] : {std::pair{"comm_src", n.comm_src}, std::pair{"comm_dst", n.comm_dst}}) {
        if (n.type != kColl && peer && *peer >= world)
          throw InputError(
              fmt::format("{}: node Id {}: \"{}\" is {}: expected a rank below {} (the trace's GPUs: "
                          "its \"ngpus\" and rank files)",
                          fn.path, n.id, key, *peer, world));
      }
      if (n.type == kColl && coll && n.comm_size && *n.comm_size > 0) {
        id = rb.collective(n.name, 0, dur, 2, deps, *coll, static_cast<std::uint64_t>(*n.comm_size), "world",
                           world_ranks);
      } else if ((n.type == kSend || n.type == kRecv) && n.comm_src && n.comm_dst && n.comm_size &&
                 *n.comm_size >= 0) {
        const bool send = n.type == kSend;
        const auto peer = static_cast<int>(send ? *n.comm_dst : *n.comm_src);
        id = rb.p2p(n.name, 0, dur, 2, deps, send ? OpKind::send : OpKind::recv, peer, n.comm_tag.value_or(0),
                    static_cast<std::uint64_t>(*n.comm_size));
      } else {
        id = rb.gpu(n.name, 0, dur, 2, deps, true);
        ++kept;
      }
      prev_comm = id;
    }
    op_of[i] = id;
    local[n.id] = id;
  }
  for (std::size_t i = 0; i < fn.nodes.size(); ++i) {
    for (std::int64_t d : fn.nodes[i].deps) {
      if (d == fn.nodes[i].id)
        throw InputError(
            fmt::format("{}: node Id {} depends on itself; expected the Ids of other nodes", fn.path, d));
      auto it = local.find(d);
      if (it == local.end())
        ++missing_deps;
      else
        rb.add_dep(op_of[i], it->second);
    }
  }
  if (missing_deps > 0)
    warnings.push_back(
        fmt::format("{}: {} dependencies on nodes not in the file ignored", fn.path, missing_deps));
  if (kept > 0) {
    warnings.push_back(fmt::format(
        "{}: {} communication node(s) without a modelled comm_type/comm_size (or peer) keep their "
        "traced runtime",
        fn.path, kept));
  }
  if (no_runtime > 0)
    warnings.push_back(fmt::format("{}: {} node(s) without \"runtime\" take 0 s", fn.path, no_runtime));
}

}  // namespace

ImportedTrace import_chakra(const std::vector<std::string>& files) {
  if (files.empty()) throw InputError("chakra import: no trace files");
  ImportedTrace t;
  t.format = "chakra";
  t.iteration = "whole trace";
  int world = 0;
  std::vector<FileNodes> all = read_files(files, world, t.warnings);
  std::vector<int> world_ranks(static_cast<std::size_t>(world));
  for (int i = 0; i < world; ++i) world_ranks[static_cast<std::size_t>(i)] = i;
  TraceGraphBuilder builder(world);
  for (auto& fn : all) build_rank(fn, world, world_ranks, builder.rank(fn.rank), t.warnings);
  // Send/recv pairs need both ends: a send whose traced peer lacks the matching recv would hang.
  t.graph = builder.finish(t.traced_start_s, t.warnings);
  t.traced_start_s.clear();  // the JSON form has no timestamps
  std::vector<std::string> ranks;
  ranks.reserve(all.size());
  for (const auto& fn : all) ranks.push_back(std::to_string(fn.rank));
  t.source = fmt::format("{} Chakra file{} (rank {})", all.size(), all.size() == 1 ? "" : "s", fmt::join(ranks, ", "));
  t.warnings.push_back("Chakra JSON has no timestamps: the traced time is the graph scheduled with the traced runtimes");
  return t;
}

}  // namespace commstack::workloads::importers
