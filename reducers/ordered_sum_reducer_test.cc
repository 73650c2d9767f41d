// ordered_sum over a real Gloo group whose ranks are threads: the sum of
// the chunk rows is bitwise the same at 1, 2, 3 and 4 ranks, however the
// chunks are dealt, and is the rows added along the fixed tree
// (reducers/chunk_tree.h); a rank puts one gradient's bytes into the
// reduction when its share is a subtree.
#include "reducers/ordered_sum_reducer.h"

#include <cmath>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "collectives/local_process_group.h"
#include "reducers/chunk_tree.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

constexpr int kChunks = 12;
constexpr int kElements = 257;

// Chunk k's gradient: values of very different magnitudes, so that another
// order of the additions rounds differently; element 3 is -0 in every row.
at::Tensor ChunkGradient(int k) {
  at::Tensor g = at::sin(at::arange(kElements, at::kFloat) * (k + 1)) *
                 static_cast<float>(std::pow(10.0, (k % 5) - 2));
  g[3] = -0.0f;
  return g;
}

OrderedSumReducer MakeReducer(int chunk_slots = 2) {
  absl::StatusOr<OrderedSumReducer> reducer = OrderedSumReducer::Create(chunk_slots);
  EXPECT_TRUE(reducer.ok()) << reducer.status();
  return *reducer;
}

// The [K, n] matrix of a rank holding chunks [first, first + count).
at::Tensor RankRows(int first, int count) {
  at::Tensor rows = at::zeros({kChunks, kElements}, at::kFloat);
  for (int k = first; k < first + count; ++k) rows[k].copy_(ChunkGradient(k));
  return rows;
}

// The row bounds of a deal: rank r holds deal[r] consecutive chunks.
std::vector<int64_t> BoundsOf(const std::vector<int>& deal) {
  std::vector<int64_t> bounds = {0};
  for (int count : deal) bounds.push_back(bounds.back() + count);
  return bounds;
}

// A float tensor's bits, so that -0 and +0 differ.
at::Tensor Bits(const at::Tensor& t) { return t.contiguous().view(at::kInt); }

// Every rank's sum when rank r holds `deal[r]` consecutive chunks.
std::vector<at::Tensor> SumsOver(const std::vector<int>& deal) {
  const int world = static_cast<int>(deal.size());
  std::vector<at::Tensor> sums(world);
  std::vector<OrderedSumReducer> reducers(world, MakeReducer());
  const std::vector<int64_t> bounds = BoundsOf(deal);
  auto sum_on = [&](int rank, c10d::ProcessGroup* group) {
    at::Tensor rows = RankRows(bounds[rank], deal[rank]);
    absl::StatusOr<at::Tensor> sum = reducers[rank].SumChunks(rows, bounds, group);
    if (!sum.ok()) return sum.status();
    sums[rank] = *sum;
    return absl::OkStatus();
  };
  if (world == 1) {
    EXPECT_TRUE(sum_on(0, nullptr).ok());
    return sums;
  }
  absl::Status status = RunOnLocalGroup(
      world, [&](int rank, c10d::ProcessGroup& group) { return sum_on(rank, &group); });
  EXPECT_TRUE(status.ok()) << status;
  return sums;
}

at::Tensor AllRows() { return RankRows(0, kChunks); }

TEST(OrderedSumReducerTest, TheSumIsBitwiseTheSameAtOneToFourRanksEvenOrUneven) {
  const at::Tensor expected = SumSubtree(AllRows(), 0, {0, kChunks});
  // Another order of the same additions (row by row) rounds otherwise: the
  // check below could fail.
  at::Tensor in_row_order = ChunkGradient(0).clone();
  for (int k = 1; k < kChunks; ++k) in_row_order = in_row_order + ChunkGradient(k);
  ASSERT_FALSE(at::equal(Bits(in_row_order), Bits(expected)));
  for (const std::vector<int>& deal : std::vector<std::vector<int>>{
           {12}, {6, 6}, {8, 4}, {9, 3}, {4, 4, 4}, {5, 5, 2}, {3, 3, 3, 3}, {1, 2, 4, 5},
           {0, 12}, {7, 0, 5}}) {
    for (const at::Tensor& sum : SumsOver(deal)) {
      EXPECT_TRUE(at::equal(Bits(sum), Bits(expected))) << "deal of " << deal.size() << " ranks";
    }
  }
  // -0 in every row stays -0, the same at every world size.
  EXPECT_TRUE(std::signbit(expected[3].item<float>()));
}

// Shares that are subtrees of the tree (12 rows: [0, 8) and [8, 12) on two
// ranks, thirds on three) put one gradient's bytes each into the reduction,
// as allreduce_sum does.
TEST(OrderedSumReducerTest, ARankWhoseShareIsASubtreeSendsOneGradient) {
  for (const std::vector<int>& deal : std::vector<std::vector<int>>{{8, 4}, {4, 4, 4}}) {
    const int world = static_cast<int>(deal.size());
    std::vector<OrderedSumReducer> reducers(world, MakeReducer());
    const std::vector<int64_t> bounds = BoundsOf(deal);
    absl::Status status = RunOnLocalGroup(world, [&](int rank, c10d::ProcessGroup& group) {
      at::Tensor rows = RankRows(bounds[rank], deal[rank]);
      return reducers[rank].SumChunks(rows, bounds, &group).status();
    });
    ASSERT_TRUE(status.ok()) << status;
    for (int rank = 0; rank < world; ++rank) {
      // Two ranks: one all-gather; more: an all-to-all and an all-gather.
      EXPECT_EQ(reducers[rank].stats().collectives, world == 2 ? 1 : 2);
      EXPECT_EQ(reducers[rank].stats().bytes, int64_t{kElements} * 4) << "rank " << rank;
      EXPECT_GT(reducers[rank].stats().seconds, 0);
    }
  }
  // [0, 6) of 12 rows is [0, 4) and [4, 6): two gradients.
  std::vector<OrderedSumReducer> reducers(2, MakeReducer());
  const std::vector<int64_t> halves = {0, 6, 12};
  ASSERT_TRUE(RunOnLocalGroup(2, [&](int rank, c10d::ProcessGroup& group) {
                at::Tensor rows = RankRows(halves[rank], 6);
                return reducers[rank].SumChunks(rows, halves, &group).status();
              }).ok());
  EXPECT_EQ(reducers[0].stats().bytes, 2 * int64_t{kElements} * 4);
}

// The trainer's way on a group, rank r holding deal[r] chunks: the rows a
// rank computed first, what its buckets hold (its last row; with
// `last_subtree`, the tree's sum of its last held subtree, that subtree's
// rows in `rows` then NaN, never read) in three buckets of uneven size,
// the last with a rider each rank writes its own part of, each bucket
// started alone. Every bucket ends with the tree's sum of its elements, the
// bits of the whole row summed at once, and the rider with every rank's
// part.
void ExpectBucketByBucketSums(const std::vector<int>& deal, bool last_subtree) {
  const at::Tensor expected = SumSubtree(AllRows(), 0, {0, kChunks});
  const std::vector<int64_t> bucket_sizes = {100, 1, 156};
  const int world = static_cast<int>(deal.size());
  std::vector<OrderedSumReducer> reducers(world, MakeReducer());
  const std::vector<int64_t> bounds = BoundsOf(deal);
  std::vector<at::Tensor> results(world);
  std::vector<at::Tensor> riders(world);
  absl::Status status = RunOnLocalGroup(world, [&](int rank, c10d::ProcessGroup& group) {
    const at::Tensor all = RankRows(bounds[rank], deal[rank]);
    at::Tensor rows = all.narrow(0, bounds[rank], deal[rank]).clone();
    ChunkTreeNode node;
    if (deal[rank] > 0) {
      node = last_subtree ? HeldSubtrees(kChunks, bounds[rank], bounds[rank + 1]).back()
                          : ChunkTreeNode{bounds[rank + 1] - 1, bounds[rank + 1]};
    }
    const at::Tensor in_buckets = node.hi > node.lo ? SumSubtree(all, 0, node)
                                                    : at::zeros({kElements}, at::kFloat);
    if (node.hi > node.lo) {
      rows.narrow(0, node.lo - bounds[rank], node.hi - node.lo)
          .fill_(last_subtree ? NAN : 0.0f);
    }
    std::vector<at::Tensor> flats;
    int64_t at = 0;
    for (size_t b = 0; b < bucket_sizes.size(); ++b) {
      const bool with_rider = b + 1 == bucket_sizes.size();
      at::Tensor flat = at::zeros({bucket_sizes[b] + (with_rider ? world : 0)}, at::kFloat);
      flat.narrow(0, 0, bucket_sizes[b]).copy_(in_buckets.narrow(0, at, bucket_sizes[b]));
      if (with_rider) flat[bucket_sizes[b] + rank] = 1000.0f + rank;
      at += bucket_sizes[b];
      flats.push_back(flat);
    }
    if (absl::Status s = reducers[rank].BeginChunkBuckets(rows, node, bounds); !s.ok()) {
      return s;
    }
    for (at::Tensor& flat : flats) {
      if (absl::Status s = reducers[rank].StartBucket(flat, group); !s.ok()) return s;
    }
    if (absl::Status s = reducers[rank].FinishBuckets(); !s.ok()) return s;
    std::vector<at::Tensor> gradients;
    for (size_t b = 0; b < flats.size(); ++b) {
      gradients.push_back(flats[b].narrow(0, 0, bucket_sizes[b]));
    }
    results[rank] = at::cat(gradients);
    riders[rank] = flats.back().narrow(0, bucket_sizes.back(), world).clone();
    return absl::OkStatus();
  });
  ASSERT_TRUE(status.ok()) << status;
  for (int rank = 0; rank < world; ++rank) {
    EXPECT_TRUE(at::equal(Bits(results[rank]), Bits(expected)))
        << "rank " << rank << " of a deal of " << world;
    EXPECT_TRUE(at::equal(riders[rank], at::arange(world, at::kFloat) + 1000.0f))
        << "rank " << rank << " of a deal of " << world << ": " << riders[rank];
    EXPECT_EQ(reducers[rank].stats().collectives, (world == 2 ? 1 : 2) * 3);
  }
}

const std::vector<std::vector<int>>& BucketDeals() {
  static const std::vector<std::vector<int>> deals = {
      {6, 6}, {8, 4}, {9, 3}, {0, 12}, {4, 4, 4}, {1, 2, 4, 5}, {7, 0, 5}};
  return deals;
}

TEST(OrderedSumReducerTest, BucketByBucketGivesTheWholeSumsBitsAndEveryRanksRider) {
  for (const std::vector<int>& deal : BucketDeals()) ExpectBucketByBucketSums(deal, false);
}

// The trainer accumulates a rank's two chunks of one subtree into its
// buckets: the buckets then hold that subtree's sum, and the rows of it are
// not read (NaN above). The same bits at every deal.
TEST(OrderedSumReducerTest, BucketsHoldingASubtreesSumGiveTheSameBits) {
  for (const std::vector<int>& deal : BucketDeals()) ExpectBucketByBucketSums(deal, true);
  // Every rank's share one subtree of several rows; a rank with two.
  for (const std::vector<int>& deal : std::vector<std::vector<int>>{{2, 2, 4, 4}, {4, 8}}) {
    ExpectBucketByBucketSums(deal, true);
  }
}

TEST(OrderedSumReducerTest, BucketsHoldingNeitherARowNorASubtreeOfTheRankAreRefused) {
  OrderedSumReducer reducer = MakeReducer();
  const std::vector<int64_t> halves = {0, 6, 12};
  absl::Status status = RunOnLocalGroup(2, [&](int rank, c10d::ProcessGroup& group) {
    // Rank 0 is refused before any collective; rank 1 calls nothing.
    if (rank == 1) return absl::OkStatus();
    at::Tensor rows = at::zeros({6, kElements}, at::kFloat);
    // [0, 6) is the subtrees [0, 4) and [4, 6), not one node.
    if (absl::Status s = reducer.BeginChunkBuckets(rows, ChunkTreeNode{0, 6}, halves); !s.ok()) {
      return s;
    }
    at::Tensor flat = at::zeros({kElements}, at::kFloat);
    return reducer.StartBucket(flat, group);
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(),
              HasSubstr("the buckets hold rows [0, 6), neither one of rank 0's rows [0, 6) "
                        "nor a subtree it holds"));
}

// One chunk a rank: each rank sends its bucket as it is (no copy), and
// the sum is still row 0 + row 1, the riders each rank's.
TEST(OrderedSumReducerTest, OneChunkARankSendsTheBucketItselfAndSumsAlike) {
  const at::Tensor expected = ChunkGradient(0) + ChunkGradient(1);
  std::vector<OrderedSumReducer> reducers(2, MakeReducer());
  std::vector<at::Tensor> flats(2);
  const std::vector<int64_t> bounds = {0, 1, 2};
  ASSERT_TRUE(RunOnLocalGroup(2, [&](int rank, c10d::ProcessGroup& group) {
                at::Tensor rows = at::zeros({1, kElements}, at::kFloat);
                flats[rank] = at::zeros({kElements + 2}, at::kFloat);
                flats[rank].narrow(0, 0, kElements).copy_(ChunkGradient(rank));
                flats[rank][kElements + rank] = 7.0f + rank;
                if (absl::Status s = reducers[rank].BeginChunkBuckets(
                        rows, ChunkTreeNode{rank, rank + 1}, bounds);
                    !s.ok()) {
                  return s;
                }
                if (absl::Status s = reducers[rank].StartBucket(flats[rank], group); !s.ok()) {
                  return s;
                }
                return reducers[rank].FinishBuckets();
              }).ok());
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(at::equal(Bits(flats[rank].narrow(0, 0, kElements)), Bits(expected)));
    EXPECT_EQ(flats[rank][kElements].item<float>(), 7.0f);
    EXPECT_EQ(flats[rank][kElements + 1].item<float>(), 8.0f);
    EXPECT_EQ(reducers[rank].stats().bytes, (int64_t{kElements} + 2) * 4);
  }
}

TEST(OrderedSumReducerTest, ABucketWithoutTheUpdatesRowsIsRefused) {
  OrderedSumReducer reducer = MakeReducer();
  absl::Status status = RunOnLocalGroup(2, [&](int, c10d::ProcessGroup& group) {
    at::Tensor flat = at::zeros({4}, at::kFloat);
    return reducer.StartBucket(flat, group);
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(status.message(), HasSubstr("without BeginChunkBuckets"));
  absl::StatusOr<OrderedSumReducer> negative = OrderedSumReducer::Create(2, -1);
  ASSERT_FALSE(negative.ok());
  EXPECT_THAT(negative.status().message(), HasSubstr("bucket_cap_bytes"));
}

TEST(OrderedSumReducerTest, RowBoundsThatAreNotTheGroupsAreRefused) {
  OrderedSumReducer reducer = MakeReducer();
  at::Tensor rows = AllRows();
  for (const std::vector<int64_t>& bounds :
       std::vector<std::vector<int64_t>>{{0, 6, 12}, {0, 11}, {1, 12}, {}}) {
    absl::StatusOr<at::Tensor> sum = reducer.SumChunks(rows, bounds, nullptr);
    EXPECT_EQ(sum.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(sum.status().message(), HasSubstr("ascending bounds from 0 to the 12 chunk rows"));
  }
}

TEST(OrderedSumReducerTest, ChunkSlotsBelowOneAreRefusedAndBucketsAreNotItsWay) {
  absl::StatusOr<OrderedSumReducer> none = OrderedSumReducer::Create(0);
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("chunk_slots: must be >= 1, got 0"));
  OrderedSumReducer reducer = MakeReducer(3);
  EXPECT_EQ(reducer.chunk_slots(), 3);
  EXPECT_TRUE(reducer.world_size_independent());
}

}  // namespace
}  // namespace receipt_parity
