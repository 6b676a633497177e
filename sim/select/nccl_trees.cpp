#include "sim/select/nccl_trees.hpp"

#include <algorithm>
#include <stdexcept>

namespace commstack::select {

TreeLinks nccl_btree(int nodes, int node) {
  TreeLinks t;
  int bit = 1;
  for (; bit < nodes; bit <<= 1)
    if (bit & node) break;
  if (node == 0) {
    // The root's only child is > 0: NCCL stores it as child 1.
    t.down[1] = nodes > 1 ? bit >> 1 : -1;
    return t;
  }
  int up = (node ^ bit) | (bit << 1);
  if (up >= nodes) up = node ^ bit;
  t.up = up;
  int lowbit = bit >> 1;
  t.down[0] = lowbit == 0 ? -1 : node - lowbit;
  int down1 = lowbit == 0 ? -1 : node + lowbit;
  while (down1 >= nodes) {  // as NCCL: the first child within bounds going down the bits
    down1 = lowbit == 0 ? -1 : node + lowbit;
    lowbit >>= 1;
  }
  t.down[1] = down1;
  return t;
}

std::array<TreeLinks, 2> nccl_dtree(int nodes, int node) {
  std::array<TreeLinks, 2> out{nccl_btree(nodes, node), TreeLinks{}};
  auto map = [&](int r, auto f) { return r == -1 ? -1 : f(r); };
  if (nodes % 2 == 1) {
    const TreeLinks s = nccl_btree(nodes, (node - 1 + nodes) % nodes);
    auto shift = [&](int r) { return (r + 1) % nodes; };
    out[1] = {map(s.up, shift), {map(s.down[0], shift), map(s.down[1], shift)}};
  } else {
    const TreeLinks m = nccl_btree(nodes, nodes - 1 - node);
    auto mirror = [&](int r) { return nodes - 1 - r; };
    out[1] = {map(m.up, mirror), {map(m.down[0], mirror), map(m.down[1], mirror)}};
  }
  return out;
}

double nccl_dtree_max_egress(int nodes) {
  if (nodes < 1) throw std::invalid_argument("nccl_dtree_max_egress: nodes must be >= 1");
  double most = 0;
  for (int node = 0; node < nodes; ++node) {
    double links = 0;  // parent and children over both trees, each carrying S/2
    for (const TreeLinks& t : nccl_dtree(nodes, node))
      links += (t.up != -1) + (t.down[0] != -1) + (t.down[1] != -1);
    most = std::max(most, links / 2);
  }
  return most;
}

}  // namespace commstack::select
