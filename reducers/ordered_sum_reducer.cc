#include "reducers/ordered_sum_reducer.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <stdexcept>
#include <string>
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

// Adds the ranks' tails, laid at `at` in each of `received`, in rank order.
void AddTailsInRankOrder(const std::vector<at::Tensor>& received, int64_t at, int64_t tail,
                         at::Tensor out) {
  if (tail == 0) return;
  at::Tensor sum = received[0].narrow(0, at, tail).clone();
  for (size_t q = 1; q < received.size(); ++q) sum.add_(received[q].narrow(0, at, tail));
  out.narrow(0, out.numel() - tail, tail).copy_(sum);
}

}  // namespace

absl::StatusOr<OrderedSumReducer> OrderedSumReducer::Create(int chunk_slots,
                                                           int64_t bucket_cap_bytes) {
  if (chunk_slots < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk_slots: must be >= 1, got ", chunk_slots));
  }
  absl::StatusOr<int64_t> cap = BucketCapBytes(bucket_cap_bytes);
  if (!cap.ok()) return cap.status();
  return OrderedSumReducer(chunk_slots, *cap);
}

std::vector<GradientBucket> OrderedSumReducer::PlanBuckets(
    const std::vector<at::Tensor>& gradients) const {
  return receipt_parity::PlanBuckets(gradients, bucket_cap_bytes_);
}

absl::Status OrderedSumReducer::ReduceBucket(at::Tensor& /*flat*/,
                                             c10d::ProcessGroup& /*group*/) {
  return absl::UnimplementedError(
      "ordered_sum reduces the update's chunk gradients (SumChunks, or BeginChunkBuckets "
      "then the buckets), not a bucket alone");
}

absl::Status OrderedSumReducer::BeginChunkBuckets(const at::Tensor& rows,
                                                  ChunkTreeNode buckets_node,
                                                  absl::Span<const int64_t> row_bounds) {
  if (!in_flight_.empty()) {
    return absl::FailedPreconditionError(
        "ordered_sum: BeginChunkBuckets while the last update's buckets are in flight");
  }
  rows_ = rows;
  buckets_node_ = buckets_node;
  row_bounds_.assign(row_bounds.begin(), row_bounds.end());
  total_rows_ = row_bounds.empty() ? 0 : row_bounds.back();
  next_element_ = 0;
  held_.clear();
  start_seconds_ = 0;
  begun_ = true;
  return absl::OkStatus();
}

absl::Status OrderedSumReducer::StartBucket(at::Tensor& flat, c10d::ProcessGroup& group) {
  if (!begun_) {
    return absl::FailedPreconditionError(
        "ordered_sum: a bucket started without BeginChunkBuckets (the update's chunk rows)");
  }
  const auto start = std::chrono::steady_clock::now();
  if (held_.empty()) {
    world_ = group.getSize();
    rank_ = group.getRank();
    if (absl::Status s = CheckRowBounds(row_bounds_, world_, total_rows_); !s.ok()) {
      return s;
    }
    const int64_t own_rows = row_bounds_[rank_ + 1] - row_bounds_[rank_];
    if (rows_.dim() != 2 || rows_.size(0) != own_rows) {
      return absl::InvalidArgumentError(absl::StrCat("ordered_sum: rank ", rank_, " holds ",
                                                     own_rows, " chunk rows, given ",
                                                     rows_.dim() == 2 ? rows_.size(0) : -1));
    }
    held_ = HeldByRank(total_rows_, row_bounds_);
    first_row_ = row_bounds_[rank_];
    if (absl::Status s = CheckBucketsNode(); !s.ok()) {
      held_.clear();
      return s;
    }
  }
  const int64_t n = rows_.size(1);
  const int64_t len = std::min<int64_t>(flat.numel(), n - next_element_);
  try {
    // This rank's rows of the bucket's elements: the buckets' node's first
    // row is the bucket itself (its other rows are not read).
    std::vector<at::Tensor> rows;
    for (int64_t i = 0; i < rows_.size(0); ++i) {
      rows.push_back(first_row_ + i == buckets_node_.lo && buckets_node_.hi > buckets_node_.lo
                         ? flat.narrow(0, 0, len)
                         : rows_[i].narrow(0, next_element_, len));
    }
    Start(rows, len, flat.narrow(0, len, flat.numel() - len), flat, group);
  } catch (const std::exception& e) {
    return CollectiveErrorToStatus(e, absl::StrCat("ordered_sum: a bucket of ", flat.numel(),
                                                   " elements"));
  }
  next_element_ += len;
  start_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return absl::OkStatus();
}

absl::Status OrderedSumReducer::FinishBuckets() {
  if (!begun_) return absl::OkStatus();
  begun_ = false;
  const int64_t covered = next_element_;
  const int64_t n = rows_.size(1);
  rows_ = at::Tensor();
  const auto start = std::chrono::steady_clock::now();
  try {
    FinishAll();
  } catch (const std::exception& e) {
    in_flight_.clear();
    return CollectiveErrorToStatus(e, "ordered_sum: the buckets' sums");
  }
  stats_.seconds +=
      start_seconds_ +
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (covered != n) {
    return absl::InternalError(absl::StrCat("ordered_sum: the buckets held ", covered,
                                            " gradient elements of the rows' ", n));
  }
  return absl::OkStatus();
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
  const int rank = group->getRank();
  at::Tensor own = chunks.narrow(0, row_bounds[rank], row_bounds[rank + 1] - row_bounds[rank]);
  if (absl::Status s = BeginChunkBuckets(own, ChunkTreeNode(), row_bounds); !s.ok()) return s;
  at::Tensor total;
  try {
    total = at::empty({chunks.size(1)}, chunks.options());
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("ordered_sum: LibTorch: ", e.what()));
  }
  if (absl::Status s = StartBucket(total, *group); !s.ok()) {
    begun_ = false;
    in_flight_.clear();
    return s;
  }
  if (absl::Status s = FinishBuckets(); !s.ok()) return s;
  return total;
}

at::Tensor OrderedSumReducer::Buffer(size_t stretch, int slot, int64_t numel,
                                     const at::TensorOptions& options) {
  if (buffers_.size() <= stretch) buffers_.resize(stretch + 1);
  std::vector<at::Tensor>& kept = buffers_[stretch];
  if (kept.size() <= static_cast<size_t>(slot)) kept.resize(slot + 1);
  at::Tensor& buffer = kept[slot];
  if (!buffer.defined() || buffer.numel() != numel || buffer.dtype() != options.dtype() ||
      buffer.device() != options.device()) {
    buffer = at::empty({numel}, options);
  }
  return buffer;
}

void OrderedSumReducer::Start(const std::vector<at::Tensor>& rows, int64_t len,
                              const at::Tensor& tail, at::Tensor out,
                              c10d::ProcessGroup& group) {
  InFlight stretch;
  stretch.out = out;
  stretch.len = len;
  stretch.tail = tail.numel();
  const size_t ordinal = in_flight_.size();
  const std::vector<ChunkTreeNode>& mine = held_[rank_];
  const auto held = static_cast<int64_t>(mine.size());
  stats_.bytes += (held * len + stretch.tail) * out.element_size();
  ++stats_.collectives;
  group_ = &group;
  if (world_ == 2 && RootOfTwoSubtrees()) {
    StartAllReduce(rows, tail, group, ordinal, stretch);
    in_flight_.push_back(std::move(stretch));
    return;
  }
  if (world_ == 2) {
    // One all-gather of both ranks' subtree sums (padded to the larger
    // count) and tails. A rank whose one subtree is the buckets' row sends
    // the bucket as it is.
    const int64_t most = MostHeld();
    const bool whole_bucket = most == 1 && held == 1 && IsTheBucket(mine[0], stretch);
    at::Tensor contribution =
        whole_bucket ? out : Buffer(ordinal, 0, most * len + stretch.tail, out.options());
    for (int64_t i = 0; i < held && !whole_bucket; ++i) {
      OwnSubtreeInto(rows, mine[static_cast<size_t>(i)], contribution.narrow(0, i * len, len));
    }
    if (!whole_bucket) {
      contribution.narrow(0, held * len, (most - held) * len).zero_();
      contribution.narrow(0, most * len, stretch.tail).copy_(tail);
    }
    std::vector<std::vector<at::Tensor>> received(1);
    for (int q = 0; q < world_; ++q) {
      received[0].push_back(Buffer(ordinal, q + 1, contribution.numel(), out.options()));
    }
    std::vector<at::Tensor> input = {contribution};
    stretch.work = group.allgather(received, input);
    stretch.received = received[0];
    in_flight_.push_back(std::move(stretch));
    return;
  }
  // The all-to-all: piece s of this rank's subtree sums to rank s.
  const int64_t piece = (len + world_ - 1) / world_;
  at::Tensor sums = at::empty({held, len}, out.options());
  for (int64_t i = 0; i < held; ++i) {
    OwnSubtreeInto(rows, mine[static_cast<size_t>(i)], sums[i]);
  }
  at::Tensor input = PiecesByDestination(sums, world_, piece);
  std::vector<int64_t> input_splits(world_, held * piece);
  std::vector<int64_t> output_splits;
  int64_t received = 0;
  for (int q = 0; q < world_; ++q) {
    output_splits.push_back(static_cast<int64_t>(held_[q].size()) * piece);
    received += output_splits.back();
  }
  at::Tensor output = Buffer(ordinal, 0, received, out.options());
  stretch.work = group.alltoall_base(output, input, output_splits, input_splits);
  stretch.received = {output};
  stretch.own_tail = tail.clone();
  ++stats_.collectives;
  in_flight_.push_back(std::move(stretch));
}

void OrderedSumReducer::StartAllReduce(const std::vector<at::Tensor>& rows,
                                       const at::Tensor& tail, c10d::ProcessGroup& group,
                                       size_t ordinal, InFlight& stretch) {
  const ChunkTreeNode mine = held_[rank_][0];
  const int64_t len = stretch.len;
  // In the bucket itself when the subtree is the buckets' row.
  const bool whole_bucket = IsTheBucket(mine, stretch);
  at::Tensor summed =
      whole_bucket ? stretch.out : Buffer(ordinal, 0, len + stretch.tail, stretch.out.options());
  if (!whole_bucket) {
    OwnSubtreeInto(rows, mine, summed.narrow(0, 0, len));
    summed.narrow(0, len, stretch.tail).copy_(tail);
  }
  c10d::AllreduceOptions sum;
  sum.reduceOp = c10d::ReduceOp::SUM;
  std::vector<at::Tensor> tensors = {summed};
  stretch.work = group.allreduce(tensors, sum);
  stretch.all_reduced = summed;
}

bool OrderedSumReducer::IsTheBucket(ChunkTreeNode node, const InFlight& stretch) const {
  return node == buckets_node_ && stretch.out.numel() == stretch.len + stretch.tail;
}

void OrderedSumReducer::OwnSubtreeInto(const std::vector<at::Tensor>& rows, ChunkTreeNode node,
                                       at::Tensor out) const {
  if (node == buckets_node_ && node.hi - node.lo > 1) {
    out.copy_(rows[static_cast<size_t>(node.lo - first_row_)]);
    return;
  }
  SumSubtreeInto(rows, first_row_, node, out);
}

absl::Status OrderedSumReducer::CheckBucketsNode() const {
  const ChunkTreeNode node = buckets_node_;
  if (node.lo == node.hi) return absl::OkStatus();
  const int64_t last_row = row_bounds_[rank_ + 1];
  const bool own_row = node.hi - node.lo == 1 && node.lo >= first_row_ && node.hi <= last_row;
  const std::vector<ChunkTreeNode>& mine = held_[rank_];
  if (own_row || std::find(mine.begin(), mine.end(), node) != mine.end()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "ordered_sum: the buckets hold rows [", node.lo, ", ", node.hi, "), neither one of rank ",
      rank_, "'s rows [", first_row_, ", ", last_row, ") nor a subtree it holds"));
}

bool OrderedSumReducer::RootOfTwoSubtrees() const {
  if (held_.size() != 2 || held_[0].size() != 1 || held_[1].size() != 1 || total_rows_ < 2) {
    return false;
  }
  const int64_t split = ChunkTreeSplit({0, total_rows_});
  return held_[0][0] == ChunkTreeNode{0, split} && held_[1][0] == ChunkTreeNode{split, total_rows_};
}

int64_t OrderedSumReducer::MostHeld() const {
  size_t most = 0;
  for (const std::vector<ChunkTreeNode>& of_rank : held_) most = std::max(most, of_rank.size());
  return static_cast<int64_t>(most);
}

std::vector<ChunkTreeNode> OrderedSumReducer::RootsInRowOrder() const {
  std::vector<ChunkTreeNode> roots;
  for (const std::vector<ChunkTreeNode>& of_rank : held_) {
    roots.insert(roots.end(), of_rank.begin(), of_rank.end());
  }
  return roots;
}

void OrderedSumReducer::FinishAll() {
  std::vector<InFlight> stretches = std::move(in_flight_);
  in_flight_.clear();
  if (world_ == 2) {
    for (InFlight& stretch : stretches) FinishTwoRanks(stretch);
    return;
  }
  for (InFlight& stretch : stretches) StartGather(stretch);
  for (InFlight& stretch : stretches) FinishGathered(stretch);
}

void OrderedSumReducer::FinishTwoRanks(InFlight& stretch) {
  stretch.work->wait();
  if (stretch.all_reduced.defined()) {
    if (!stretch.all_reduced.is_same(stretch.out)) stretch.out.copy_(stretch.all_reduced);
    return;
  }
  const int64_t len = stretch.len;
  std::vector<at::Tensor> sums;
  for (int q = 0; q < world_; ++q) {
    for (size_t i = 0; i < held_[q].size(); ++i) {
      sums.push_back(stretch.received[q].narrow(0, static_cast<int64_t>(i) * len, len));
    }
  }
  absl::Status summed =
      SumFromRootsInto(total_rows_, RootsInRowOrder(), sums, stretch.out.narrow(0, 0, len));
  if (!summed.ok()) throw std::runtime_error(std::string(summed.message()));
  AddTailsInRankOrder(stretch.received, MostHeld() * len, stretch.tail, stretch.out);
}

void OrderedSumReducer::StartGather(InFlight& stretch) {
  stretch.work->wait();
  const int64_t piece = (stretch.len + world_ - 1) / world_;
  // Every rank's subtrees of this rank's piece, in row order: the tree
  // above them added here, in its order.
  std::vector<at::Tensor> root_pieces;
  int64_t at = 0;
  for (int q = 0; q < world_; ++q) {
    for (size_t i = 0; i < held_[q].size(); ++i) {
      root_pieces.push_back(stretch.received[0].narrow(0, at, piece));
      at += piece;
    }
  }
  absl::StatusOr<at::Tensor> mine = SumFromRoots(total_rows_, RootsInRowOrder(), root_pieces);
  if (!mine.ok()) throw std::runtime_error(std::string(mine.status().message()));
  at::Tensor contribution = at::cat({*mine, stretch.own_tail});
  std::vector<std::vector<at::Tensor>> gathered(1);
  for (int q = 0; q < world_; ++q) gathered[0].push_back(at::empty_like(contribution));
  std::vector<at::Tensor> input = {contribution};
  stretch.work = group_->allgather(gathered, input);
  stretch.received = gathered[0];
}

void OrderedSumReducer::FinishGathered(InFlight& stretch) {
  stretch.work->wait();
  const int64_t piece = (stretch.len + world_ - 1) / world_;
  std::vector<at::Tensor> pieces;
  for (const at::Tensor& of_rank : stretch.received) pieces.push_back(of_rank.narrow(0, 0, piece));
  stretch.out.narrow(0, 0, stretch.len).copy_(at::cat(pieces).narrow(0, 0, stretch.len));
  AddTailsInRankOrder(stretch.received, piece, stretch.tail, stretch.out);
}

}  // namespace receipt_parity
