// parse_cluster(): the cluster JSON schema of docs/cluster-format.md, read strictly (every
// field checked for type and range, unknown fields rejected, errors carry origin + JSON path).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "topologies/cluster.hpp"
#include "topologies/schema/json_reader.hpp"

namespace commstack::topologies {
namespace {

using schema::ObjectReader;

constexpr int kMaxNodes = 1 << 20;
constexpr int kMaxGpusPerNode = 1024;

std::vector<NicSpec> parse_nics(ObjectReader nics, NodeSpec& node) {
  const double bw = nics.bandwidth("bandwidth");
  const double lat = nics.latency("latency");
  const auto& gpus = nics.raw("gpus");
  std::vector<NicSpec> out;
  if (gpus.is_string() && gpus.get<std::string>() == "all") {
    node.nic_per_gpu = true;
    for (int g = 0; g < node.gpus; ++g) out.push_back(NicSpec{g, bw, lat});
  } else if (gpus.is_array()) {
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      const std::string path = fmt::format("{}/{}", nics.path_of("gpus"), i);
      const int g = schema::to_int(gpus[i], nics.origin(), path, 0, kMaxGpusPerNode);
      if (g >= node.gpus) {
        throw InputError(fmt::format("{}: {}: NIC attached to GPU {}, but /node/gpus = {} (expected 0..{})",
                                     nics.origin(), path, g, node.gpus, node.gpus - 1));
      }
      out.push_back(NicSpec{g, bw, lat});
    }
  } else {
    nics.fail("gpus", "\"all\" (one NIC per GPU) or an array of local GPU indices", gpus);
  }
  nics.finish();
  return out;
}

NodeSpec parse_node(ObjectReader r) {
  NodeSpec n;
  n.gpus = r.integer("gpus", 1, kMaxGpusPerNode);
  n.gpu_model = r.optional_string("gpu_model").value_or("");
  n.nvswitch = r.boolean("nvswitch");
  n.gpu_link_bandwidth_Bps = r.bandwidth("gpu_link_bandwidth");
  n.gpu_link_latency_s = r.latency("gpu_link_latency");
  n.pcie_bandwidth_Bps = r.bandwidth("pcie_bandwidth");
  n.pcie_latency_s = r.latency("pcie_latency");
  if (r.has("nics")) n.nics = parse_nics(r.object("nics"), n);
  n.nvlink_domain_nodes = r.optional_integer("nvlink_domain_nodes", 1, kMaxNodes).value_or(1);
  if (n.nvlink_domain_nodes > 1 && !n.nvswitch) {
    r.fail_message("nvlink_domain_nodes", "a multi-node NVLink domain needs /node/nvswitch = true");
  }
  r.finish();
  return n;
}

FabricKind parse_kind(ObjectReader& r) {
  const auto& v = r.raw("kind");
  const std::string expected = "one of \"none\", \"rail_fat_tree\", \"fat_tree\", \"torus\", \"dragonfly\"";
  if (!v.is_string()) r.fail("kind", expected, v);
  const auto s = v.get<std::string>();
  if (s == "none") return FabricKind::none;
  if (s == "rail_fat_tree") return FabricKind::rail_fat_tree;
  if (s == "fat_tree") return FabricKind::fat_tree;
  if (s == "torus") return FabricKind::torus;
  if (s == "dragonfly") return FabricKind::dragonfly;
  r.fail("kind", expected, v);
}

void parse_clos(ObjectReader& r, FabricSpec& f) {
  const auto& tiers = r.raw("tiers");
  if (tiers.is_string() && tiers.get<std::string>() == "auto") {
    f.tiers = 0;
  } else if (tiers.is_number_integer() && (tiers.get<long long>() == 2 || tiers.get<long long>() == 3)) {
    f.tiers = static_cast<int>(tiers.get<long long>());
  } else {
    throw InputError(fmt::format("{}: {}: expected 2, 3 or \"auto\", got {}", r.origin(), r.path_of("tiers"),
                                 tiers.dump()));
  }
  f.switch_radix = r.integer("switch_radix", 4, 65536);
  if (f.switch_radix % 2 != 0) r.fail("switch_radix", "an even port count", r.raw("switch_radix"));
  f.nodes_per_unit = r.integer("nodes_per_unit", 1, kMaxNodes);
  f.oversubscription.clear();
  if (r.has("oversubscription")) {
    const auto& o = r.raw("oversubscription");
    const std::size_t max_len = f.tiers == 2 ? 1 : 2;
    if (!o.is_array() || o.empty() || o.size() > max_len) {
      r.fail("oversubscription", fmt::format("an array of 1..{} down:up ratios >= 1 (leaf first)", max_len), o);
    }
    for (std::size_t i = 0; i < o.size(); ++i) {
      // Beyond 1024:1 (one uplink per 1024 ports, more than any switch has) a ratio is a typo.
      if (!o[i].is_number() || !(o[i].get<double>() >= 1.0) || !(o[i].get<double>() <= 1024.0)) {
        throw InputError(
            fmt::format("{}: {}/{}: expected a down:up ratio from 1 (non-blocking) to 1024, got {}",
                        r.origin(), r.path_of("oversubscription"), i, schema::describe(o[i])));
      }
      f.oversubscription.push_back(o[i].get<double>());
    }
  }
  f.oversubscription.resize(2, 1.0);
}

void parse_torus(ObjectReader& r, FabricSpec& f) {
  const auto& d = r.raw("dims");
  if (!d.is_array() || d.empty() || d.size() > 6) r.fail("dims", "an array of 1 to 6 ring sizes, e.g. [4, 4, 4, 4]", d);
  f.dims.clear();
  for (std::size_t i = 0; i < d.size(); ++i) {
    f.dims.push_back(schema::to_int(d[i], r.origin(), fmt::format("{}/{}", r.path_of("dims"), i), 1, kMaxNodes));
  }
}

void parse_dragonfly(ObjectReader& r, FabricSpec& f) {
  // Bounds well above real routers (Rosetta: 64 ports, 32 routers per group) that keep the
  // all-to-all local links of a group within memory.
  f.routers_per_group = r.integer("routers_per_group", 1, 1024);
  f.nodes_per_router = r.integer("nodes_per_router", 1, 1024);
  f.global_links_per_router = r.integer("global_links_per_router", 0, 1024);
}

FabricSpec parse_fabric(ObjectReader r) {
  FabricSpec f;
  f.kind = parse_kind(r);
  if (f.kind != FabricKind::none) {
    f.link_bandwidth_Bps = r.bandwidth("link_bandwidth");
    f.link_latency_s = r.latency("link_latency");
  }
  switch (f.kind) {
    case FabricKind::none: break;
    case FabricKind::rail_fat_tree:
    case FabricKind::fat_tree: parse_clos(r, f); break;
    case FabricKind::torus: parse_torus(r, f); break;
    case FabricKind::dragonfly: parse_dragonfly(r, f); break;
  }
  r.finish();  // a field of another family (e.g. dims on a fat tree) is reported as unknown here
  return f;
}

}  // namespace

std::string to_string(FabricKind kind) {
  switch (kind) {
    case FabricKind::none: return "none";
    case FabricKind::rail_fat_tree: return "rail_fat_tree";
    case FabricKind::fat_tree: return "fat_tree";
    case FabricKind::torus: return "torus";
    case FabricKind::dragonfly: return "dragonfly";
  }
  return "?";
}

ClusterSpec parse_cluster(const nlohmann::json& doc, const std::string& origin) {
  ObjectReader r(doc, origin, "");
  ClusterSpec c;
  c.origin = origin;
  c.name = r.string("name");
  c.description = r.optional_string("description").value_or("");
  if (r.has("sources")) c.sources = r.string_list("sources");
  if (r.has("assumptions")) c.assumptions = r.string_list("assumptions");
  c.nodes = r.integer("nodes", 1, kMaxNodes);
  c.node = parse_node(r.object("node"));
  if (r.has("fabric")) c.fabric = parse_fabric(r.object("fabric"));
  r.finish();

  const int domain = c.node.nvlink_domain_nodes;
  if (domain > 1 && (c.fabric.kind == FabricKind::rail_fat_tree || c.fabric.kind == FabricKind::fat_tree) &&
      c.fabric.nodes_per_unit % domain != 0) {
    // Keeps every NVLink domain inside one unit, which the diameter symmetry argument relies on.
    throw InputError(fmt::format("{}: /fabric/nodes_per_unit: expected a multiple of /node/nvlink_domain_nodes = {}, got {}",
                                 origin, domain, c.fabric.nodes_per_unit));
  }
  if (c.fabric.kind == FabricKind::torus) {
    long long product = 1;
    for (int k : c.fabric.dims) product = std::min<long long>(product * k, kMaxNodes + 1LL);  // no overflow
    if (product != c.nodes) {
      throw InputError(fmt::format("{}: /fabric/dims: the product of the ring sizes ({}) must equal /nodes ({})",
                                   origin, product, c.nodes));
    }
  }
  return c;
}

}  // namespace commstack::topologies
