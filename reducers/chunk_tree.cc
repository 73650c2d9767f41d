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

absl::Status NotACover(int64_t rows, size_t roots) {
  return absl::InvalidArgumentError(absl::StrCat(
      "chunk tree: the ", roots, " roots given are not subtrees covering the ", rows,
      " rows exactly"));
}

// Counts the roots at or below `node` that a sum would use; `*missing`
// when a leaf under it is in no root.
void CountCover(ChunkTreeNode node, const RootIndex& index, size_t* used, bool* missing) {
  if (index.count({node.lo, node.hi}) > 0) {
    ++*used;
    return;
  }
  if (node.hi - node.lo < 2) {
    *missing = true;
    return;
  }
  const int64_t split = ChunkTreeSplit(node);
  CountCover({node.lo, split}, index, used, missing);
  CountCover({split, node.hi}, index, used, missing);
}

// The sum of `node` from the roots at or below it (IndexRoots checked that
// they cover it exactly); with `out` defined, written there (the root's
// call).
at::Tensor SumAbove(ChunkTreeNode node, const RootIndex& index,
                    const std::vector<at::Tensor>& sums, at::Tensor out = at::Tensor()) {
  const auto found = index.find({node.lo, node.hi});
  if (found != index.end()) {
    if (out.defined()) return out.copy_(sums[found->second]);
    return sums[found->second];
  }
  const int64_t split = ChunkTreeSplit(node);
  at::Tensor left = SumAbove({node.lo, split}, index, sums);
  at::Tensor right = SumAbove({split, node.hi}, index, sums);
  if (out.defined()) return at::add_out(out, left, right);
  return at::add(left, right);
}

// The index of `roots`, or InvalidArgument for a count that is not `sums`'.
absl::StatusOr<RootIndex> IndexRoots(int64_t rows, const std::vector<ChunkTreeNode>& roots,
                                     const std::vector<at::Tensor>& sums) {
  if (rows < 1 || roots.size() != sums.size()) {
    return absl::InvalidArgumentError(absl::StrCat("chunk tree: ", roots.size(), " roots and ",
                                                   sums.size(), " sums over ", rows, " rows"));
  }
  RootIndex index;
  for (size_t i = 0; i < roots.size(); ++i) index[{roots[i].lo, roots[i].hi}] = i;
  if (index.size() != roots.size()) return NotACover(rows, roots.size());
  // Every leaf under some root, each root used once: checked without adding.
  size_t used = 0;
  bool missing = false;
  CountCover({0, rows}, index, &used, &missing);
  if (missing || used != roots.size()) return NotACover(rows, roots.size());
  return index;
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
  at::Tensor sum = at::empty({chunks.size(1)}, chunks.options());
  SumSubtreeInto(chunks, offset, node, sum);
  return sum;
}

void SumSubtreeInto(const at::Tensor& chunks, int64_t offset, ChunkTreeNode node, at::Tensor out) {
  SumSubtreeInto(chunks.unbind(0), offset, node, out);
}

void SumSubtreeInto(const std::vector<at::Tensor>& rows, int64_t offset, ChunkTreeNode node,
                    at::Tensor out) {
  if (node.hi - node.lo == 1) {
    out.copy_(rows[node.lo - offset]);
    return;
  }
  // out = left + right, the left first: a leaf is read where it lies.
  const int64_t split = ChunkTreeSplit(node);
  SumSubtreeInto(rows, offset, {node.lo, split}, out);
  if (node.hi - split == 1) {
    out.add_(rows[split - offset]);
    return;
  }
  at::Tensor right = at::empty_like(out);
  SumSubtreeInto(rows, offset, {split, node.hi}, right);
  out.add_(right);
}

absl::StatusOr<at::Tensor> SumFromRoots(int64_t rows, const std::vector<ChunkTreeNode>& roots,
                                        const std::vector<at::Tensor>& sums) {
  absl::StatusOr<RootIndex> index = IndexRoots(rows, roots, sums);
  if (!index.ok()) return index.status();
  at::Tensor total = SumAbove({0, rows}, *index, sums);
  // A single root is the caller's tensor: the total is a tensor of its own.
  return roots.size() == 1 ? total.clone() : total;
}

absl::Status SumFromRootsInto(int64_t rows, const std::vector<ChunkTreeNode>& roots,
                              const std::vector<at::Tensor>& sums, at::Tensor out) {
  absl::StatusOr<RootIndex> index = IndexRoots(rows, roots, sums);
  if (!index.ok()) return index.status();
  SumAbove({0, rows}, *index, sums, out);
  return absl::OkStatus();
}

}  // namespace receipt_parity
