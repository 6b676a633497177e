#pragma once
// Whole-topology properties with Boost.Graph: connectivity (validation), GPU-to-GPU diameter in
// hops, bisection bandwidth by max-flow, and the summary `commstack topo` prints.
#include <string>

#include "topologies/topology.hpp"

namespace commstack::topologies {

// Throws InputError naming `origin` and the first device not connected to GPU 0.
void check_connected(const Topology& topo, const std::string& origin);

// A note for the SimGrid fabric simulation of a topology whose GPUs own several NICs each (it routes
// a GPU through one of them); empty when every GPU has at most one.
std::string several_nics_note(const Topology& topo);

// Largest shortest-path hop count between two GPUs (graph distance, not the routed path). BFS
// runs from the GPUs of topo.representative_nodes (all GPUs when empty).
int gpu_diameter(const Topology& topo);
// The same by BFS from every GPU: the reference the representative shortcut is tested against.
int gpu_diameter_exhaustive(const Topology& topo);

// Max flow (bytes/s, one direction) from GPUs [0, n/2) to GPUs [n/2, n), every link carrying its
// bandwidth in each direction independently, over all paths (not only routed ones).
double bisection_bandwidth(const Topology& topo);

struct TopologySummary {
  std::string name;
  int gpus = 0;
  int nodes = 0;
  int gpus_per_node = 0;
  int nvswitches = 0;       // NVSwitch planes (or PCIe switches of PCIe-only nodes)
  int nics = 0;
  int fabric_switches = 0;  // leaves, spines, cores, torus/dragonfly routers
  int links_nvlink = 0;
  int links_pcie = 0;
  int links_network = 0;
  int diameter_hops = 0;
  double bisection_Bps = 0;
  double injection_Bps_per_gpu = 0;  // scale-out: node 0's NIC bandwidth / GPUs per node
};

TopologySummary summarize(const Topology& topo);

}  // namespace commstack::topologies
