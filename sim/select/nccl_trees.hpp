#pragma once
// NCCL's double binary tree across nodes (src/graph/trees.cc ncclGetBtree / ncclGetDtree): which
// node is each node's parent and children in the two trees, and what that means for the network:
// the most any node sends (or receives) in one all-reduce, in units of the buffer size.
#include <array>

namespace commstack::select {

struct TreeLinks {
  int up = -1;                      // parent node, -1 for the root
  std::array<int, 2> down{-1, -1};  // children, -1 where none
};

// One binary tree over `nodes` nodes rooted at 0, as ncclGetBtree builds it (alternating leaves and
// inner nodes, so that the two trees of ncclGetDtree give every node at most one inner role).
TreeLinks nccl_btree(int nodes, int node);
// The two trees of ncclGetDtree: the btree, and its mirror (even node counts) or its shift by one
// (odd node counts).
std::array<TreeLinks, 2> nccl_dtree(int nodes, int node);

// Each tree carries half the buffer: a node sends S/2 up to its parent (reduce) and S/2 down to each
// child (broadcast), and receives as much. The largest per-node total over both trees, in units of
// S: 1 on 2 nodes, 1.5 on 3, 2 from 4 on. Throws std::invalid_argument for nodes < 1.
double nccl_dtree_max_egress(int nodes);

}  // namespace commstack::select
