#pragma once
// The physical model of a cluster: a Boost.Graph of devices (GPUs, NVSwitches, NICs, fabric
// switches) joined by full-duplex links, plus a routing function that maps a (src GPU, dst GPU)
// pair to the list of links a flow crosses, each in a direction. Everything below it (the
// SimGrid platform) and above it (collective algorithms) works on this one model.
//
// Builders in topologies/builders/ produce a Topology from a ClusterSpec; tests may also build
// small ones by hand with add_vertex/add_link and the default shortest-path router.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

namespace commstack::topologies {

enum class VertexKind { gpu, nvswitch, nic, pcie_switch, fabric_switch, router };
std::string to_string(VertexKind kind);

struct Vertex {
  VertexKind kind = VertexKind::gpu;
  std::string name;  // unique, e.g. "n3.gpu5", "leaf.su0.r2", "spine7"
  int node = -1;     // node index for devices inside a node, -1 for fabric devices
  int local = -1;    // index inside the node (GPU i, NIC i), or inside its tier for switches
  int tier = 0;      // 0 = inside a node; 1 = leaf / ToR / torus router; 2 = spine; 3 = core
  int group = -1;    // dragonfly group of a router (links between groups are global), -1 elsewhere
};

enum class LinkKind { nvlink, pcie, network };
std::string to_string(LinkKind kind);

// A full-duplex link: `bandwidth_Bps` in each direction independently, `latency_s` one way.
struct Link {
  int a = -1;
  int b = -1;
  double bandwidth_Bps = 0;
  double latency_s = 0;
  LinkKind kind = LinkKind::network;
};

// One traversal of a link. forward == true means a -> b.
struct Hop {
  int link = -1;
  bool forward = true;
  bool operator==(const Hop&) const = default;
};
using Path = std::vector<Hop>;

class Topology;

// Algorithmic routing (d-mod-k, dimension order, minimal dragonfly, ...). Must be a pure
// function of its arguments so runs are deterministic.
class Router {
public:
  virtual ~Router() = default;
  virtual Path route(const Topology& topo, int src_gpu, int dst_gpu) const = 0;
};

class Topology {
public:
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
                                      boost::property<boost::edge_index_t, int>>;

  Topology() = default;
  Topology(Topology&&) noexcept = default;
  Topology& operator=(Topology&&) noexcept = default;
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;
  ~Topology();

  std::string name;  // for reports, e.g. "dgx-h100 x 2 nodes"

  int add_vertex(Vertex v);  // returns the vertex id; a GPU also gets the next GPU rank
  int add_link(int a, int b, double bandwidth_Bps, double latency_s, LinkKind kind);

  int vertex_count() const { return static_cast<int>(vertices_.size()); }
  int link_count() const { return static_cast<int>(links_.size()); }
  int gpu_count() const { return static_cast<int>(gpus_.size()); }
  const Vertex& vertex(int id) const { return vertices_.at(static_cast<std::size_t>(id)); }
  const Link& link(int id) const { return links_.at(static_cast<std::size_t>(id)); }
  const std::vector<Vertex>& vertices() const { return vertices_; }
  const std::vector<Link>& links() const { return links_; }
  int gpu_vertex(int gpu_rank) const { return gpus_.at(static_cast<std::size_t>(gpu_rank)); }
  const Graph& graph() const { return graph_; }
  // Link ids incident to a vertex, in insertion order.
  const std::vector<int>& incident_links(int vertex) const { return incident_.at(static_cast<std::size_t>(vertex)); }

  // Flow endpoints: the GPU ranks, then every NVSwitch (in vertex order), then every fabric switch
  // (in vertex order). Switches reduce and multicast: an NVSwitch with NVLink SHARP (what NCCL's NVLS
  // algorithms run on: a GPU's multimem load-reduce reads every GPU's copy into the switch, a
  // multimem store leaves the switch to every GPU), an InfiniBand switch with SHARP (what NCCL's
  // CollNet runs on: each switch of the aggregation tree sums its children's data and sends one
  // stream up, the root's sum comes back down). Endpoint gpu_count() + i is the i-th NVSwitch
  // vertex, gpu_count() + nvswitch_count() + j the j-th fabric switch vertex.
  int nvswitch_count() const { return static_cast<int>(nvswitches_.size()); }
  int fabric_switch_count() const { return static_cast<int>(fabric_switches_.size()); }
  int endpoint_count() const { return gpu_count() + nvswitch_count() + fabric_switch_count(); }
  const Vertex& endpoint_vertex(int endpoint) const;
  // The endpoint of the NVSwitch GPU rank is linked to; -1 when it has none (a PCIe-only node,
  // direct NVLink between GPUs).
  int nvswitch_endpoint(int gpu_rank) const;
  // The endpoint of fabric switch vertex `vertex`; -1 when the vertex is not a fabric switch.
  int fabric_switch_endpoint(int vertex) const;
  // The links from GPU rank to fabric switch vertex `sw` when the GPU reaches it without another
  // device in between: its own cable to the switch, or its link to one of its NICs and that NIC's
  // cable (lowest link ids first). Empty when there is no such path.
  Path switch_uplink(int gpu_rank, int sw) const;
  // The links a flow between two endpoints crosses: route() between GPUs; between a GPU and its own
  // NVSwitch, the link joining them; between a GPU and a fabric switch, switch_uplink (or its
  // reverse); between two fabric switches, the lowest-id link joining them. Any other pair is a
  // caller's bug (std::logic_error).
  Path endpoint_route(int src, int dst) const;

  // Nodes and GPUs per node, as the builder laid them out (GPU rank = node * gpus_per_node + local).
  int nodes = 0;
  int gpus_per_node = 0;
  // Consecutive nodes sharing one NVLink fabric (GB200 NVL72: 18; 1 elsewhere, and with MNNVL off).
  int nvlink_domain_nodes = 1;
  // The most NICs one GPU owns (AWS p5: 4 EFA NICs per H100). The routers send a GPU's network
  // traffic through one of them (docs/topologies.md "Nearest-NIC rule"), so the fabric simulation
  // understates the bandwidth of such GPUs by up to this factor; the stack model counts every NIC.
  int max_nics_per_gpu = 0;

  // Nodes whose GPUs, taken together, see every GPU-to-GPU distance that occurs (the builder
  // proves this by automorphisms of its family, see docs/topologies.md). gpu_diameter() runs
  // BFS only from them; empty means "all nodes".
  std::vector<int> representative_nodes;

  void set_router(std::shared_ptr<const Router> router) { router_ = std::move(router); }
  // The links a flow from src GPU rank to dst GPU rank crosses. Empty when src == dst.
  Path route(int src_gpu, int dst_gpu) const;
  double path_latency(const Path& path) const;
  double path_bandwidth(const Path& path) const;  // the narrowest link on the path

  // Hop from vertex `from` over link `link_id`: the direction flag for a Hop.
  bool is_forward(int link_id, int from_vertex) const { return link(link_id).a == from_vertex; }

private:
  std::vector<Vertex> vertices_;
  std::vector<Link> links_;
  std::vector<int> gpus_;
  std::vector<int> nvswitches_;      // vertex ids of the NVSwitch endpoints
  std::vector<int> fabric_switches_;  // vertex ids of the fabric switch endpoints
  std::vector<int> fabric_index_;     // per vertex: its index in fabric_switches_, -1 for other devices
  std::vector<int> gpu_rank_;        // per vertex: its GPU rank, -1 for other devices
  std::vector<int> nvswitch_link_;   // per GPU rank: its first link to an NVSwitch, -1 when none
  std::vector<int> nvswitch_index_;  // per GPU rank: that NVSwitch's endpoint index, -1 when none
  std::vector<std::vector<int>> incident_;
  Graph graph_;
  std::shared_ptr<const Router> router_;
};

// Fallback router: fewest hops (Boost BFS); ties go to the neighbour BFS dequeued first, then the
// lowest link id (deterministic). Used for hand-built
// topologies in tests; real families install an algorithmic router.
class ShortestPathRouter final : public Router {
public:
  Path route(const Topology& topo, int src_gpu, int dst_gpu) const override;
};

}  // namespace commstack::topologies
