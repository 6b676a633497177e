#pragma once
// Parser for NCCL topology XML (NCCL_TOPO_DUMP_FILE output, or NCCL_TOPO_FILE inputs such as
// the Azure/AWS files): CPUs (NUMA domains), the PCI tree, GPUs (SM version, NVLink targets and
// link counts, C2C links) and NICs (speed, GDR). It yields a NodeTopology that a node model can
// be built from: GPU count, NVLink bandwidth per GPU from NCCL's per-link constants, and for
// each NIC the GPUs that sit under the same PCIe switch. Leading '#' lines (provenance headers
// of the project's data files) are skipped before the XML parser sees the text.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace commstack::fit {

struct TopoCpu {
  int numa_id = -1;
  std::string arch;    // x86_64, arm64, ppc64
  std::string vendor;  // GenuineIntel, AuthenticAMD, ...
  int family_id = -1, model_id = -1;
};

struct TopoPci {
  std::string busid;
  std::string pci_class;  // "0x060400" bridge, "0x0302xx" 3D controller (GPU), "0x0200xx"/"0x0207xx" NIC
  std::string vendor, device;
  std::string link_speed;  // "32.0 GT/s PCIe"
  int link_width = 0;
  int parent = -1;  // index in NodeTopology::pcis of the enclosing <pci>, -1 under a CPU
  int cpu = -1;     // index in NodeTopology::cpus
  // NCCL's PCI bandwidth for this link in GB/s: width x per-lane rate (topo.cc); 0 when unknown.
  double bw_GBps = 0;
};

struct TopoNvLink {
  std::string target;       // bus id of the peer (GPU or NVSwitch)
  int count = 0;            // links
  std::string target_class;  // "0x068000" = NVSwitch, "0x030200" = GPU
};

struct TopoGpu {
  int dev = -1;   // CUDA device, -1 when only a PCI entry was given
  int rank = -1;
  int sm = 0;     // compute capability x10 (80 = A100, 90 = H100/H200, 100 = B200); 0 unknown
  bool gdr = false;
  std::string busid;
  int pci = -1;  // index in pcis of the GPU's PCI device
  int cpu = -1;
  std::vector<TopoNvLink> nvlinks;
  int c2c_count = 0;
  double c2c_bw_GBps = 0;  // per link as printed
  int nvlink_count() const;
  // NVLink bandwidth of this GPU, one direction, GB/s: links x NCCL's per-link rate for its SM.
  double nvlink_bw_GBps() const;
};

struct TopoNic {
  std::string name;  // mlx5_0, eth0, ...; the PCI bus id when the file has no <net>
  int dev = -1;
  double speed_Mbps = 0;  // as in the XML (speed="400000" = 400 Gb/s); 0 unknown
  int port = 0;
  bool gdr = false;
  bool gdr_known = false;  // the <net> element has a gdr attribute (NCCL_TOPO_FILE inputs often omit it)
  int pci = -1;  // index in pcis of the NIC's PCI device, -1 when directly under a CPU
  int cpu = -1;
  std::vector<int> gpus_same_switch;  // indices in gpus behind a PCIe switch the NIC is behind too
  // NCCL's NET bandwidth: Mbps / 8000 (GB/s).
  double bw_GBps() const { return speed_Mbps / 8000.0; }
};

struct NodeTopology {
  std::string origin;
  std::vector<TopoCpu> cpus;
  std::vector<TopoPci> pcis;
  std::vector<TopoGpu> gpus;
  std::vector<TopoNic> nics;
  int gpu_count() const { return static_cast<int>(gpus.size()); }
  // Distinct NVLink targets whose class is an NVSwitch (0x0680xx); 0 on direct-NVLink boxes.
  int nvswitch_targets() const;
};

// NCCL's NVLink GB/s per link for an SM version (topo.h): SM60 18.0, SM70/SM80 20.0, SM86 12.0,
// SM90 20.6, SM100+ 40.1.
double nccl_nvlink_bw_per_link(int sm);

NodeTopology parse_nccl_topo_xml(std::string_view text, const std::string& origin);
NodeTopology parse_nccl_topo_xml_file(const std::string& path);

}  // namespace commstack::fit
