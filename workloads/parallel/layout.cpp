#include "workloads/parallel/layout.hpp"

#include <algorithm>
#include <set>

namespace commstack::workloads {

std::string to_string(GroupKind k) {
  switch (k) {
    case GroupKind::tp: return "tp";
    case GroupKind::cp: return "cp";
    case GroupKind::dp: return "dp";
    case GroupKind::dp_cp: return "dp_cp";
    case GroupKind::pp: return "pp";
    case GroupKind::ep: return "ep";
    case GroupKind::expert_tp: return "expert_tp";
    case GroupKind::expert_dp: return "expert_dp";
    case GroupKind::expert_tp_ep: return "expert_tp_ep";
    case GroupKind::embedding: return "embedding";
  }
  return "?";
}

RankLayout::RankLayout(const ParallelConfig& par) : par_(par), world_(par.gpus()) {
  int stride = 1;
  for (Dim d : par_.order) {
    stride_[static_cast<int>(d)] = stride;
    stride *= size_of(d);
  }
}

int RankLayout::size_of(Dim d) const {
  switch (d) {
    case Dim::tp: return par_.tp;
    case Dim::cp: return par_.cp;
    case Dim::dp: return par_.dp;
    case Dim::pp: return par_.pp;
  }
  return 1;
}

int RankLayout::rank(const RankCoord& c) const {
  return c.tp * stride_[static_cast<int>(Dim::tp)] + c.cp * stride_[static_cast<int>(Dim::cp)] +
         c.dp * stride_[static_cast<int>(Dim::dp)] + c.pp * stride_[static_cast<int>(Dim::pp)];
}

RankCoord RankLayout::coord(int r) const {
  RankCoord c;
  c.tp = (r / stride_[static_cast<int>(Dim::tp)]) % par_.tp;
  c.cp = (r / stride_[static_cast<int>(Dim::cp)]) % par_.cp;
  c.dp = (r / stride_[static_cast<int>(Dim::dp)]) % par_.dp;
  c.pp = (r / stride_[static_cast<int>(Dim::pp)]) % par_.pp;
  const int j = c.tp + par_.tp * (c.cp + par_.cp * c.dp);
  const int etp = par_.expert_tp();
  c.etp = j % etp;
  c.ep = (j / etp) % par_.ep;
  c.edp = j / (etp * par_.ep);
  return c;
}

std::vector<int> RankLayout::group_of(GroupKind kind, int r) const {
  const RankCoord me = coord(r);
  std::vector<int> out;
  auto with_j = [&](RankCoord c, int j) {  // set cp and dp from the combined cp x dp index
    c.cp = j % par_.cp;
    c.dp = j / par_.cp;
    return c;
  };
  // The rank of the in-stage index k = tp + t*(cp + c*dp) on this rank's stage (the expert grid).
  auto in_stage = [&](int k) { return rank(with_j({k % par_.tp, 0, 0, me.pp, 0, 0, 0}, k / par_.tp)); };
  // The in-stage index of the expert grid's coordinates (etp innermost, then ep, then edp).
  const int etp = par_.expert_tp();
  auto expert_j = [&](int t, int e, int d) { return t + etp * (e + par_.ep * d); };
  switch (kind) {
    case GroupKind::tp:
      for (int i = 0; i < par_.tp; ++i) out.push_back(rank({i, me.cp, me.dp, me.pp, 0, 0, 0}));
      break;
    case GroupKind::cp:
      for (int i = 0; i < par_.cp; ++i) out.push_back(rank({me.tp, i, me.dp, me.pp, 0, 0, 0}));
      break;
    case GroupKind::dp:
      for (int i = 0; i < par_.dp; ++i) out.push_back(rank({me.tp, me.cp, i, me.pp, 0, 0, 0}));
      break;
    case GroupKind::dp_cp:
      for (int j = 0; j < par_.cp * par_.dp; ++j) out.push_back(rank(with_j({me.tp, 0, 0, me.pp, 0, 0}, j)));
      break;
    case GroupKind::pp:
      for (int i = 0; i < par_.pp; ++i) out.push_back(rank({me.tp, me.cp, me.dp, i, 0, 0, 0}));
      break;
    case GroupKind::ep:
      for (int e = 0; e < par_.ep; ++e) out.push_back(in_stage(expert_j(me.etp, e, me.edp)));
      break;
    case GroupKind::expert_tp:
      for (int t = 0; t < etp; ++t) out.push_back(in_stage(expert_j(t, me.ep, me.edp)));
      break;
    case GroupKind::expert_dp:
      for (int d = 0; d < par_.expert_dp(); ++d) out.push_back(in_stage(expert_j(me.etp, me.ep, d)));
      break;
    case GroupKind::expert_tp_ep:
      for (int e = 0; e < par_.ep; ++e)
        for (int t = 0; t < etp; ++t) out.push_back(in_stage(expert_j(t, e, me.edp)));
      break;
    case GroupKind::embedding:
      out.push_back(rank({me.tp, me.cp, me.dp, 0, 0, 0, 0}));
      if (par_.pp > 1) out.push_back(rank({me.tp, me.cp, me.dp, par_.pp - 1, 0, 0, 0}));
      break;
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::vector<int>> RankLayout::groups(GroupKind kind) const {
  std::set<std::vector<int>> seen;
  std::vector<std::vector<int>> out;
  for (int r = 0; r < world_; ++r) {
    std::vector<int> g = group_of(kind, r);
    if (seen.insert(g).second) out.push_back(std::move(g));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> RankLayout::representative_ranks() const {
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(par_.pp));
  for (int s = 0; s < par_.pp; ++s) out.push_back(rank({0, 0, 0, s, 0, 0, 0}));
  return out;
}

}  // namespace commstack::workloads
