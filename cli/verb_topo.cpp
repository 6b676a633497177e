// `commstack topo`: build a cluster's topology and print what it is made of, its diameter,
// bisection and injection bandwidth, and how much slower than its NICs the fabric carries one
// collective's network patterns over all nodes (the stack model's contention layer); optionally
// write Graphviz.
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/graph/graphviz.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "calibration/fit/nccl_topo_xml.hpp"
#include "calibration/fit/node_from_topo_xml.hpp"
#include "cli/output_paths.hpp"
#include "cli/verbs.hpp"
#include "common/error.hpp"
#include "sim/stack/fabric_contention.hpp"
#include "topologies/analysis.hpp"
#include "topologies/cluster.hpp"

namespace commstack::cli {
namespace {

namespace topo = commstack::topologies;

struct TopoOptions {
  std::string cluster;
  std::optional<int> nodes;
  std::optional<int> gpus_per_node;
  std::string dot;
  std::string format = "text";
  bool list = false;
  std::string from_xml;       // NCCL topology XML the node model comes from
  std::string write_cluster;  // where to write the cluster JSON built from it
};

// The cluster to build: the preset / file, or a node model read from an NCCL topology XML on top
// of it (written out with --write-cluster, so it can be edited and passed to every verb).
topo::ClusterSpec cluster_of(const TopoOptions& o) {
  // --write-cluster and --dot must not replace the XML or cluster file they are built from.
  const std::vector<InputArg> inputs{{"--from-nccl-xml", o.from_xml}, {"--cluster", o.cluster, true}};
  refuse_overwriting_inputs("--write-cluster", o.write_cluster, inputs);
  refuse_overwriting_inputs("--dot", o.dot, inputs);
  if (o.from_xml.empty()) {
    if (!o.write_cluster.empty())
      throw InputError("--write-cluster: needs --from-nccl-xml (a preset is already a file)");
    if (o.cluster.empty())
      throw InputError("--cluster: required (a preset name or a JSON file; see --list-presets)");
    return topo::load_cluster(o.cluster);
  }
  const fit::NodeTopology xml = fit::parse_nccl_topo_xml_file(o.from_xml);
  std::string base = o.cluster;
  if (base.empty()) base = fit::preset_for_topo_sm(xml);
  if (base.empty())
    throw InputError(
        fmt::format("--from-nccl-xml {}: the XML gives no compute capability (PCI entries only); pass "
                    "--cluster PRESET for the GPU generation, NVLink and fabric to assume",
                    o.from_xml));
  const nlohmann::ordered_json doc =
      fit::cluster_from_nccl_topo(xml, topo::load_cluster_document(base), base);
  if (!o.write_cluster.empty()) {
    std::ofstream out(o.write_cluster);
    out << doc.dump(2) << "\n";
    if (!out) throw InputError(fmt::format("--write-cluster {}: cannot write the file", o.write_cluster));
  }
  if (o.format == "text")
    for (const auto& a : doc.at("assumptions")) fmt::print("# assumption: {}\n", a.get<std::string>());
  return topo::parse_cluster(nlohmann::json(doc), o.from_xml);
}

void write_dot(const topo::Topology& t, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw InputError(fmt::format("--dot {}: cannot open the file for writing", path));
  auto vertex_label = [&t](std::ostream& os, std::size_t v) {
    const auto& vx = t.vertex(static_cast<int>(v));
    os << "[label=\"" << vx.name << "\",kind=\"" << topo::to_string(vx.kind) << "\"]";
  };
  auto edge_label = [&t](std::ostream& os, const topo::Topology::Graph::edge_descriptor& e) {
    const auto& l = t.link(boost::get(boost::edge_index, t.graph(), e));
    os << "[label=\"" << fmt::format("{:g} GB/s", l.bandwidth_Bps / 1e9) << "\",kind=\"" << topo::to_string(l.kind)
       << "\"]";
  };
  boost::write_graphviz(out, t.graph(), vertex_label, edge_label);
  if (!out) throw InputError(fmt::format("--dot {}: write failed", path));
}

// The contention layer's factor for each network pattern of one communicator over every GPU.
struct PatternFactor {
  const char* name;
  double factor;
};
std::vector<PatternFactor> contention_factors(const topo::ClusterSpec& spec, const topo::Topology& t,
                                              sim::stack::Routing routing = sim::stack::Routing::adaptive) {
  const auto layout = sim::stack::domain_layout(spec, t.nodes, t.gpus_per_node);
  using sim::stack::NetPattern;
  const std::pair<const char*, NetPattern> patterns[] = {
      {"ring", NetPattern::ring}, {"tree", NetPattern::tree}, {"alltoall", NetPattern::alltoall}};
  std::vector<PatternFactor> out;
  for (const auto& [name, pattern] : patterns)
    out.push_back({name, sim::stack::contention_factor(t, layout, pattern, routing)});
  return out;
}

void run(const TopoOptions& o) {
  if (o.list) {
    for (const auto& [name, description] : topo::preset_descriptions()) fmt::print("{:<16} {}\n", name, description);
    return;
  }
  const auto spec = cluster_of(o);
  const auto t = topo::build_topology(spec, o.nodes, o.gpus_per_node);
  if (!o.dot.empty()) write_dot(t, o.dot);
  const auto s = topo::summarize(t);
  const auto contention = contention_factors(spec, t);
  // A dragonfly's factors depend on its routing: the stack model assumes adaptive routing; the
  // SimGrid simulation routes minimally. Both are printed so the two views can be told apart.
  const bool dragonfly = spec.fabric.kind == topo::FabricKind::dragonfly;
  const auto minimal =
      dragonfly ? contention_factors(spec, t, sim::stack::Routing::minimal) : std::vector<PatternFactor>{};
  if (o.format == "json") {
    nlohmann::ordered_json j;
    j["name"] = s.name;
    j["fabric"] = topo::to_string(spec.fabric.kind);
    j["gpus"] = s.gpus;
    j["nodes"] = s.nodes;
    j["gpus_per_node"] = s.gpus_per_node;
    j["nvswitch_planes"] = s.nvswitches;
    j["nics"] = s.nics;
    j["fabric_switches"] = s.fabric_switches;
    j["links"] = {{"nvlink", s.links_nvlink}, {"pcie", s.links_pcie}, {"network", s.links_network}};
    j["diameter_hops"] = s.diameter_hops;
    j["bisection_GBps"] = s.bisection_Bps / 1e9;
    j["injection_GBps_per_gpu"] = s.injection_Bps_per_gpu / 1e9;
    for (const auto& c : contention) j["contention_factor"][c.name] = c.factor;
    for (const auto& c : minimal) j["contention_factor_minimal_routing"][c.name] = c.factor;
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("cluster:          {} ({})\n", s.name, topo::to_string(spec.fabric.kind));
  fmt::print("GPUs:             {} ({} nodes x {})\n", s.gpus, s.nodes, s.gpus_per_node);
  fmt::print("GPU planes:       {} (NVSwitch, or PCIe switch of a PCIe-only node)\n", s.nvswitches);
  fmt::print("NICs:             {}\n", s.nics);
  fmt::print("fabric switches:  {}\n", s.fabric_switches);
  fmt::print("links:            nvlink {}, pcie {}, network {}\n", s.links_nvlink, s.links_pcie, s.links_network);
  fmt::print("diameter:         {} hops (GPU to GPU, shortest path)\n", s.diameter_hops);
  fmt::print("bisection:        {:.1f} GB/s (max flow, first half of GPUs to second half, one direction)\n",
             s.bisection_Bps / 1e9);
  fmt::print("injection:        {:.1f} GB/s per GPU (scale-out NIC bandwidth / GPUs per node)\n",
             s.injection_Bps_per_gpu / 1e9);
  fmt::print(
      "contention:       ring {:.2f}x, tree {:.2f}x, alltoall {:.2f}x (network stage of one collective over "
      "all GPUs against the NICs alone; docs/stack-model.md)\n",
      contention[0].factor, contention[1].factor, contention[2].factor);
  if (dragonfly) {
    fmt::print(
        "                  (adaptive routing: a router's local links and a group's global links share the "
        "load)\n"
        "minimal routes:   ring {:.2f}x, tree {:.2f}x, alltoall {:.2f}x (each flow on its one minimal route, "
        "as "
        "collective --profile none simulates)\n",
        minimal[0].factor, minimal[1].factor, minimal[2].factor);
  }
}

}  // namespace

void register_topo(CLI::App& app) {
  auto opts = std::make_shared<TopoOptions>();
  CLI::App* sub = app.add_subcommand(
      "topo", "Build a cluster topology and print its size, diameter, bandwidths and contention");
  sub->add_option("--cluster", opts->cluster, "Preset name or cluster JSON file (docs/cluster-format.md)");
  sub->add_option("--nodes", opts->nodes, "Override the node count");
  sub->add_option("--gpus-per-node", opts->gpus_per_node, "Override the GPUs per node");
  sub->add_option("--dot", opts->dot, "Write the graph as Graphviz to this file");
  sub->add_option("--format", opts->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  sub->add_flag("--list-presets,--list", opts->list, "List the built-in presets with their descriptions");
  sub->add_option(
      "--from-nccl-xml", opts->from_xml,
      "Node model from an NCCL topology XML (NCCL_TOPO_DUMP_FILE or an NCCL_TOPO_FILE): GPUs, NVLink, "
      "PCIe, NICs; the rest from --cluster (default: the preset of the XML's GPU generation)");
  sub->add_option(
      "--write-cluster", opts->write_cluster,
      "With --from-nccl-xml: write the cluster JSON built from it here (for --cluster of every verb)");
  on_selected(sub, [opts] { run(*opts); });
}

}  // namespace commstack::cli
