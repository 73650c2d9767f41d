// The ordered mode's reduction tree (issue 49, item 2): one fixed binary
// tree over the K chunk rows of an update, whose shape depends on K only,
// so that where its nodes are added does not change their bits.
//
// The node covering rows [lo, hi) is a leaf when hi - lo == 1; otherwise it
// is left + right, split at lo + p, p the largest power of two below
// hi - lo (the left subtree is complete). Every node is the float sum of
// exactly its two children, elementwise: the same operands give the same
// bits on any rank, in any process, for any part of the row.
//
// A rank that holds the rows [first, last) (the ordered mode deals each
// rank a contiguous run of whole chunks) adds its maximal subtrees inside
// that range alone (HeldSubtrees, SumSubtree): one when its range is a
// node of the tree, O(log K) otherwise. Only those sums need to cross
// ranks; SumFromRoots adds the nodes above them in the tree's order, so the
// total is SumSubtree of the whole tree bit for bit, whatever the split.
//
// Thread safety: free functions over their arguments.
#ifndef RECEIPT_PARITY_REDUCERS_CHUNK_TREE_H_
#define RECEIPT_PARITY_REDUCERS_CHUNK_TREE_H_

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"

namespace receipt_parity {

// Rows [lo, hi) of the tree: a node of it when made by the functions here.
struct ChunkTreeNode {
  int64_t lo = 0;
  int64_t hi = 0;

  bool operator==(const ChunkTreeNode& other) const {
    return lo == other.lo && hi == other.hi;
  }
};

// The split of a node of two rows or more: its right child's first row.
// REQUIRES: node.hi - node.lo >= 2.
int64_t ChunkTreeSplit(ChunkTreeNode node);

// The maximal subtrees of the tree over `rows` rows that lie inside
// [first, last), in row order: they cover [first, last) exactly. Empty
// when first == last. REQUIRES: 0 <= first <= last <= rows.
std::vector<ChunkTreeNode> HeldSubtrees(int64_t rows, int64_t first, int64_t last);

// The tree's sum of the rows of `node`, each row k being `chunks[k -
// offset]` ([*, n], the rows from `offset` on). Throws LibTorch's errors.
// REQUIRES: node is a node of the tree, offset <= node.lo, node.hi -
// offset <= chunks.size(0).
at::Tensor SumSubtree(const at::Tensor& chunks, int64_t offset, ChunkTreeNode node);
// The same sum written into `out` ([n], not overlapping `chunks`): the same
// bits, without a tensor of its own.
void SumSubtreeInto(const at::Tensor& chunks, int64_t offset, ChunkTreeNode node, at::Tensor out);
// The same with row k given as `rows[k - offset]` ([n] each, anywhere in
// memory: a rank's rows need not be one matrix).
void SumSubtreeInto(const std::vector<at::Tensor>& rows, int64_t offset, ChunkTreeNode node,
                    at::Tensor out);

// The sum of the whole tree over `rows` rows from sums of subtrees that
// cover [0, rows) exactly, given in row order (`roots[i]` summed to
// `sums[i]`, each [n]), every node above them added left + right.
// InvalidArgument when the roots are not such a cover. LibTorch's errors
// are thrown.
absl::StatusOr<at::Tensor> SumFromRoots(int64_t rows, const std::vector<ChunkTreeNode>& roots,
                                        const std::vector<at::Tensor>& sums);
// The same sum written into `out` ([n], not overlapping `sums`). Errors as
// SumFromRoots (`out` then unchanged).
absl::Status SumFromRootsInto(int64_t rows, const std::vector<ChunkTreeNode>& roots,
                              const std::vector<at::Tensor>& sums, at::Tensor out);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_REDUCERS_CHUNK_TREE_H_
