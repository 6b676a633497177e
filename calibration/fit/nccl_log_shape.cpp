#include "calibration/fit/nccl_log_shape.hpp"

#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack::fit {

namespace {
select::GraphParams to_params(const NcclGraphLine& g, const std::string& origin) {
  select::GraphParams p;
  p.n_channels = g.n_channels;
  p.bw_intra = g.bw_intra_GBps;
  p.bw_inter = g.bw_inter_GBps;
  if (!select::parse_path_type(g.type_intra, p.type_intra) || !select::parse_path_type(g.type_inter, p.type_inter))
    throw InputError(fmt::format("{}:{}: GRAPH line: unknown path type '{}/{}'", origin, g.line, g.type_intra, g.type_inter));
  p.same_channels = g.same_channels != 0;
  p.pattern = g.pattern;
  return p;
}
}  // namespace

select::CommShape comm_shape_from_log(const NcclLog& log, int sm, select::CpuVendor cpu_vendor) {
  if (log.comms.empty())
    throw InputError(fmt::format("{}: no 'comm ... rank r nRanks n nNodes m' line; cannot tell the communicator shape", log.origin));
  const NcclCommLine& c = log.comms.front();
  select::CommShape s;
  s.n_ranks = c.n_ranks;
  s.n_nodes = c.n_nodes.value_or(1);
  s.local_ranks = c.local_ranks.value_or(0);
  s.min_sm = s.max_sm = sm;
  s.cpu_vendor = cpu_vendor;
  bool ring = false, tree = false, nvls = false;
  for (const auto& g : log.graphs) {  // every rank prints its graphs; the first of each kind is used
    if (g.pattern == 4 && !ring) s.ring = to_params(g, log.origin), ring = true;
    else if (g.pattern >= 1 && g.pattern <= 3 && !tree) s.tree = to_params(g, log.origin), tree = true;
    else if (g.pattern == 5 && !nvls) s.nvls = to_params(g, log.origin), nvls = true;
    else if (g.pattern == 6) s.collnet_direct = to_params(g, log.origin);
  }
  if (!ring) throw InputError(fmt::format("{}: no ring GRAPH line ('Pattern 4, ...'); run with NCCL_DEBUG_SUBSYS=INIT,GRAPH", log.origin));
  if (!tree) s.tree = s.ring;
  s.nvls_support = log.nvls_multicast && nvls;
  if (log.coll_channels) s.n_channels = *log.coll_channels;
  if (log.nvls_channels) s.nvls_channels = *log.nvls_channels;
  return s;
}

}  // namespace commstack::fit
