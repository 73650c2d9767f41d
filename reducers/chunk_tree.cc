#include "reducers/chunk_tree.h"

#include <map>
#include <utility>

#include <ATen/ATen.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace receipt_parity {
namespace {

void CollectHeld(ChunkTreeNode node, int64_t first, int64_t last,
                 std::vector<ChunkTreeNode>* held) {
  if (node.hi <= first || node.lo >= last) return;
  if (first <= node.lo && node.hi <= last) {
    held->push_back(node);
    return;
  }
  const int64_t split = ChunkTreeSplit(node);
  CollectHeld({node.lo, split}, first, last, held);
  CollectHeld({split, node.hi}, first, last, held);
}

using RootIndex = std::map<std::pair<int64_t, int64_t>, size_t>;

// The sum of `node` from the roots at or below it; nullopt-like undefined
// tensor and `*missing` set when a leaf under it is in no root.
at::Tensor SumAbove(ChunkTreeNode node, const RootIndex& index,
                    const std::vector<at::Tensor>& sums, size_t* used, bool* missing) {
  const auto found = index.find({node.lo, node.hi});
  if (found != index.end()) {
    ++*used;
    return sums[found->second];
  }
  if (node.hi - node.lo < 2) {
    *missing = true;
    return at::Tensor();
  }
  const int64_t split = ChunkTreeSplit(node);
  at::Tensor left = SumAbove({node.lo, split}, index, sums, used, missing);
  at::Tensor right = SumAbove({split, node.hi}, index, sums, used, missing);
  if (*missing) return at::Tensor();
  return at::add(left, right);
}

}  // namespace

int64_t ChunkTreeSplit(ChunkTreeNode node) {
  const int64_t size = node.hi - node.lo;
  int64_t power = 1;
  while (power * 2 < size) power *= 2;
  return node.lo + power;
}

std::vector<ChunkTreeNode> HeldSubtrees(int64_t rows, int64_t first, int64_t last) {
  std::vector<ChunkTreeNode> held;
  if (rows > 0 && first < last) CollectHeld({0, rows}, first, last, &held);
  return held;
}

at::Tensor SumSubtree(const at::Tensor& chunks, int64_t offset, ChunkTreeNode node) {
  if (node.hi - node.lo == 1) return chunks[node.lo - offset].clone();
  const int64_t split = ChunkTreeSplit(node);
  at::Tensor sum = SumSubtree(chunks, offset, {node.lo, split});
  sum.add_(SumSubtree(chunks, offset, {split, node.hi}));
  return sum;
}

absl::StatusOr<at::Tensor> SumFromRoots(int64_t rows, const std::vector<ChunkTreeNode>& roots,
                                        const std::vector<at::Tensor>& sums) {
  if (rows < 1 || roots.size() != sums.size()) {
    return absl::InvalidArgumentError(absl::StrCat("chunk tree: ", roots.size(), " roots and ",
                                                   sums.size(), " sums over ", rows, " rows"));
  }
  RootIndex index;
  for (size_t i = 0; i < roots.size(); ++i) index[{roots[i].lo, roots[i].hi}] = i;
  size_t used = 0;
  bool missing = false;
  at::Tensor total = SumAbove({0, rows}, index, sums, &used, &missing);
  if (missing || used != roots.size() || index.size() != roots.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "chunk tree: the ", roots.size(), " roots given are not subtrees covering the ", rows,
        " rows exactly"));
  }
  // A single root is the caller's tensor: the total is a tensor of its own.
  return roots.size() == 1 ? total.clone() : total;
}

}  // namespace receipt_parity
