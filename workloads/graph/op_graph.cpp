#include "workloads/graph/op_graph.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace commstack::workloads {

std::string to_string(OpKind k) {
  switch (k) {
    case OpKind::compute: return "compute";
    case OpKind::collective: return "collective";
    case OpKind::send: return "send";
    case OpKind::recv: return "recv";
  }
  return "?";
}
std::string to_string(Collective c) {
  switch (c) {
    case Collective::none: return "none";
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_to_all: return "all_to_all";
    case Collective::broadcast: return "broadcast";
    case Collective::reduce: return "reduce";
  }
  return "?";
}
std::string to_string(Stream s) {
  switch (s) {
    case Stream::compute: return "compute";
    case Stream::tp: return "tp";
    case Stream::cp: return "cp";
    case Stream::ep: return "ep";
    case Stream::dp: return "dp";
    case Stream::pp: return "pp";
  }
  return "?";
}
std::string to_string(Phase p) {
  switch (p) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::recompute: return "recompute";
    case Phase::optimizer: return "optimizer";
  }
  return "?";
}
std::string to_string(ComputeClass c) {
  switch (c) {
    case ComputeClass::none: return "none";
    case ComputeClass::gemm: return "gemm";
    case ComputeClass::attention: return "attention";
    case ComputeClass::elementwise: return "elementwise";
    case ComputeClass::optimizer: return "optimizer";
  }
  return "?";
}

int OpGraph::communicator(GroupKind kind, const std::vector<int>& ranks_in) {
  for (const Communicator& c : communicators) {
    if (c.kind == kind && c.ranks == ranks_in) return c.id;
  }
  Communicator c;
  c.id = static_cast<int>(communicators.size());
  c.kind = kind;
  c.ranks = ranks_in;
  communicators.push_back(std::move(c));
  return communicators.back().id;
}

int OpGraph::imported_communicator(const std::string& label, const std::vector<int>& ranks_in) {
  for (const Communicator& c : communicators) {
    if (c.imported && c.label == label && c.ranks == ranks_in) return c.id;
  }
  Communicator c;
  c.id = static_cast<int>(communicators.size());
  c.imported = true;
  c.label = label;
  c.ranks = ranks_in;
  communicators.push_back(std::move(c));
  return communicators.back().id;
}

const char* OpGraph::intern(std::string_view text) {
  if (!names_) names_ = std::make_shared<std::set<std::string, std::less<>>>();
  auto it = names_->find(text);
  if (it == names_->end()) it = names_->emplace(text).first;
  return it->c_str();
}

void check_graph(const OpGraph& g) {
  auto broken = [](const std::string& msg) { throw std::logic_error("op graph: " + msg); };
  std::map<std::tuple<int, int, std::int64_t>, int> sends, recvs;  // (from, to, tag) -> count
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    if (op.id != static_cast<int>(i)) broken(fmt::format("op {} has id {}", i, op.id));
    for (int d : op.deps) {
      if (d < 0 || d >= op.id) broken(fmt::format("op {} depends on {} (must be an earlier op)", op.id, d));
      if (g.ops[static_cast<std::size_t>(d)].rank != op.rank) broken(fmt::format("op {} depends on op {} of another rank", op.id, d));
    }
    if (op.kind == OpKind::collective) {
      if (op.communicator < 0 || op.communicator >= static_cast<int>(g.communicators.size())) {
        broken(fmt::format("op {} has no communicator", op.id));
      }
      const auto& r = g.communicators[static_cast<std::size_t>(op.communicator)].ranks;
      if (!std::binary_search(r.begin(), r.end(), op.rank)) broken(fmt::format("op {}: rank not in its communicator", op.id));
    }
    if (op.kind == OpKind::send) ++sends[{op.rank, op.peer, op.tag}];
    if (op.kind == OpKind::recv) ++recvs[{op.peer, op.rank, op.tag}];
  }
  // Every send to a generated rank has exactly one matching recv there, and vice versa.
  auto generated = [&](int r) { return std::find(g.ranks.begin(), g.ranks.end(), r) != g.ranks.end(); };
  for (const auto& [key, n] : sends) {
    if (n != 1) broken(fmt::format("send tag {} issued {} times", std::get<2>(key), n));
    if (generated(std::get<1>(key)) && !recvs.contains(key)) broken(fmt::format("send tag {} has no recv", std::get<2>(key)));
  }
  for (const auto& [key, n] : recvs) {
    if (n != 1) broken(fmt::format("recv tag {} posted {} times", std::get<2>(key), n));
    if (generated(std::get<0>(key)) && !sends.contains(key)) broken(fmt::format("recv tag {} has no send", std::get<2>(key)));
  }
}

nlohmann::ordered_json to_json(const OpGraph& g) {
  nlohmann::ordered_json j;
  j["world"] = g.world;
  j["ranks"] = g.ranks;
  auto& comms = j["communicators"] = nlohmann::ordered_json::array();
  for (const Communicator& c : g.communicators) {
    if (c.imported) comms.push_back({{"id", c.id}, {"kind", "imported"}, {"label", c.label}, {"ranks", c.ranks}});
    else comms.push_back({{"id", c.id}, {"kind", to_string(c.kind)}, {"ranks", c.ranks}});
  }
  auto& ops = j["ops"] = nlohmann::ordered_json::array();
  for (const Op& op : g.ops) {
    nlohmann::ordered_json o;
    o["id"] = op.id;
    o["rank"] = op.rank;
    o["kind"] = to_string(op.kind);
    o["stream"] = to_string(op.stream);
    o["phase"] = to_string(op.phase);
    o["name"] = op.name;
    o["micro_batch"] = op.micro_batch;
    o["layer"] = op.layer;
    o["chunk"] = op.chunk;
    if (op.kind == OpKind::compute) {
      o["class"] = to_string(op.cclass);
      o["flops"] = op.flops;
      o["mem_bytes"] = op.mem_bytes;
    } else {
      o["bytes"] = op.bytes;
      if (op.kind == OpKind::collective) {
        o["collective"] = to_string(op.collective);
        o["communicator"] = op.communicator;
        o["instance"] = op.instance;
      } else {
        o["peer"] = op.peer;
        o["tag"] = op.tag;
      }
    }
    o["deps"] = op.deps;
    if (op.measured_s >= 0) o["measured_s"] = op.measured_s;
    if (op.lane >= 0) o["lane"] = op.lane;
    if (op.host) o["host"] = true;
    ops.push_back(std::move(o));
  }
  return j;
}

}  // namespace commstack::workloads
