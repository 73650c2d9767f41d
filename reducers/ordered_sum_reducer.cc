#include "reducers/ordered_sum_reducer.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collectives/collective_error.h"
#include "reducers/chunk_tree.h"

namespace receipt_parity {
namespace {

absl::Status CheckRowBounds(absl::Span<const int64_t> row_bounds, int world, int64_t rows) {
  bool ordered = row_bounds.size() == static_cast<size_t>(world) + 1 &&
                 row_bounds.front() == 0 && row_bounds.back() == rows;
  for (size_t r = 1; ordered && r < row_bounds.size(); ++r) {
    ordered = row_bounds[r - 1] <= row_bounds[r];
  }
  if (ordered) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "ordered_sum: row bounds [", absl::StrJoin(row_bounds, ", "), "] are not ", world + 1,
      " ascending bounds from 0 to the ", rows, " chunk rows"));
}

// Every rank's subtrees of the tree over `rows`, by rank.
std::vector<std::vector<ChunkTreeNode>> HeldByRank(int64_t rows,
                                                   absl::Span<const int64_t> row_bounds) {
  std::vector<std::vector<ChunkTreeNode>> held;
  for (size_t r = 0; r + 1 < row_bounds.size(); ++r) {
    held.push_back(HeldSubtrees(rows, row_bounds[r], row_bounds[r + 1]));
  }
  return held;
}

// `sums` ([m, n]) cut into `world` pieces of `piece` elements (the last
// padded with zeros), piece by piece: the all-to-all's input, piece s for
// rank s.
at::Tensor PiecesByDestination(const at::Tensor& sums, int world, int64_t piece) {
  const int64_t n = sums.size(1);
  at::Tensor padded = at::zeros({sums.size(0), world * piece}, sums.options());
  padded.narrow(1, 0, n).copy_(sums);
  return padded.view({sums.size(0), world, piece}).transpose(0, 1).contiguous().view(-1);
}

}  // namespace

absl::StatusOr<OrderedSumReducer> OrderedSumReducer::Create(int chunk_slots) {
  if (chunk_slots < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk_slots: must be >= 1, got ", chunk_slots));
  }
  return OrderedSumReducer(chunk_slots);
}

absl::Status OrderedSumReducer::ReduceBucket(at::Tensor& /*flat*/,
                                             c10d::ProcessGroup& /*group*/) {
  return absl::UnimplementedError(
      "ordered_sum reduces the update's chunk gradients (SumChunks), not buckets");
}

absl::StatusOr<at::Tensor> OrderedSumReducer::SumChunks(at::Tensor& chunks,
                                                        absl::Span<const int64_t> row_bounds,
                                                        c10d::ProcessGroup* group) {
  const int64_t rows = chunks.size(0);
  const int world = group == nullptr ? 1 : group->getSize();
  if (absl::Status s = CheckRowBounds(row_bounds, world, rows); !s.ok()) return s;
  if (group == nullptr) {
    try {
      return SumSubtree(chunks, 0, {0, rows});
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat("ordered_sum: LibTorch: ", e.what()));
    }
  }
  const std::vector<std::vector<ChunkTreeNode>> held = HeldByRank(rows, row_bounds);
  const int rank = group->getRank();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<at::Tensor> total;
  try {
    std::vector<at::Tensor> own;
    for (const ChunkTreeNode& node : held[rank]) own.push_back(SumSubtree(chunks, 0, node));
    total = world == 2 ? SumOverTwoRanks(chunks, held, own, *group)
                       : SumByPieces(chunks, held, own, *group);
    stats_.bytes += static_cast<int64_t>(own.size()) * chunks.size(1) * chunks.element_size();
  } catch (const std::exception& e) {
    return CollectiveErrorToStatus(
        e, absl::StrCat("ordered_sum: ", held[rank].size(), " subtree sums of ",
                        chunks.size(1), " elements over ", rows, " chunk rows"));
  }
  stats_.seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return total;
}

absl::StatusOr<at::Tensor> OrderedSumReducer::SumOverTwoRanks(
    const at::Tensor& chunks, const std::vector<std::vector<ChunkTreeNode>>& held,
    const std::vector<at::Tensor>& own, c10d::ProcessGroup& group) {
  const int64_t n = chunks.size(1);
  const int64_t most = static_cast<int64_t>(std::max(held[0].size(), held[1].size()));
  at::Tensor mine = at::zeros({most, n}, chunks.options());
  for (size_t i = 0; i < own.size(); ++i) mine[static_cast<int64_t>(i)].copy_(own[i]);
  std::vector<std::vector<at::Tensor>> gathered(1);
  for (int q = 0; q < 2; ++q) gathered[0].push_back(at::empty({most, n}, chunks.options()));
  std::vector<at::Tensor> contribution = {mine};
  group.allgather(gathered, contribution)->wait();
  ++stats_.collectives;
  std::vector<ChunkTreeNode> roots;
  std::vector<at::Tensor> sums;
  for (int q = 0; q < 2; ++q) {
    for (size_t i = 0; i < held[q].size(); ++i) {
      roots.push_back(held[q][i]);
      sums.push_back(gathered[0][q][static_cast<int64_t>(i)]);
    }
  }
  return SumFromRoots(chunks.size(0), roots, sums);
}

absl::StatusOr<at::Tensor> OrderedSumReducer::SumByPieces(
    const at::Tensor& chunks, const std::vector<std::vector<ChunkTreeNode>>& held,
    const std::vector<at::Tensor>& own, c10d::ProcessGroup& group) {
  const int world = group.getSize();
  const int64_t n = chunks.size(1);
  const int64_t piece = (n + world - 1) / world;
  // This rank's subtree sums, each piece to the rank that adds it.
  at::Tensor sums = own.empty() ? at::zeros({0, n}, chunks.options()) : at::stack(own);
  at::Tensor input = PiecesByDestination(sums, world, piece);
  std::vector<int64_t> input_splits(world, static_cast<int64_t>(own.size()) * piece);
  std::vector<int64_t> output_splits;
  int64_t received = 0;
  for (int q = 0; q < world; ++q) {
    output_splits.push_back(static_cast<int64_t>(held[q].size()) * piece);
    received += output_splits.back();
  }
  at::Tensor output = at::empty({received}, chunks.options());
  group.alltoall_base(output, input, output_splits, input_splits)->wait();
  // Every rank's subtrees of this rank's piece, in row order: the tree
  // above them added here, in its order.
  std::vector<ChunkTreeNode> roots;
  std::vector<at::Tensor> root_pieces;
  int64_t at = 0;
  for (int q = 0; q < world; ++q) {
    for (const ChunkTreeNode& node : held[q]) {
      roots.push_back(node);
      root_pieces.push_back(output.narrow(0, at, piece));
      at += piece;
    }
  }
  absl::StatusOr<at::Tensor> mine = SumFromRoots(chunks.size(0), roots, root_pieces);
  if (!mine.ok()) return mine.status();
  std::vector<std::vector<at::Tensor>> gathered(1);
  for (int q = 0; q < world; ++q) gathered[0].push_back(at::empty({piece}, chunks.options()));
  std::vector<at::Tensor> contribution = {*mine};
  group.allgather(gathered, contribution)->wait();
  stats_.collectives += 2;
  return at::cat(gathered[0]).narrow(0, 0, n).clone();
}

}  // namespace receipt_parity
