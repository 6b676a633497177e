// FabricKind::none: one node, or the nodes of one multi-node NVLink domain, without scale-out.
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "common/error.hpp"
#include "topologies/builders/builders.hpp"
#include "topologies/builders/intra_node.hpp"

namespace commstack::topologies::builders {
namespace {

class SingleDomainRouter final : public Router {
public:
  explicit SingleDomainRouter(IntraNode intra) : in_(std::move(intra)) {}
  Path route(const Topology& /*topo*/, int src, int dst) const override {
    Path path;
    if (!in_.route_inside(src, dst, path)) throw std::logic_error("single-domain router: GPUs in different domains");
    return path;
  }

private:
  IntraNode in_;
};

}  // namespace

void check_link_budget(long long links, const BuildInputs& in, const char* what) {
  constexpr long long kMaxLinks = 8'000'000;  // ~0.5 GB of graph; 16k-GPU clusters need < 100k
  if (links > kMaxLinks) {
    throw InputError(fmt::format("{}: {}: this shape needs {} fabric links, more than the {} the simulator accepts; "
                                 "expected a smaller cluster", in.origin, what, links, kMaxLinks));
  }
}

void build_single(Topology& topo, const BuildInputs& in) {
  IntraNode intra = build_intra_node(topo, in.spec.node, in.nics, in.nodes, in.gpus);
  topo.representative_nodes = {0};  // all nodes hang off the one plane the same way
  topo.set_router(std::make_shared<SingleDomainRouter>(std::move(intra)));
}

}  // namespace commstack::topologies::builders
