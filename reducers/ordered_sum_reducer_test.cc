// ordered_sum over a real Gloo group whose ranks are threads: the sum of
// the chunk rows is bitwise the same at 1, 2, 3 and 4 ranks, however the
// chunks are dealt, and equals the rows added in chunk order.
#include "reducers/ordered_sum_reducer.h"

#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "collectives/local_process_group.h"

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

// Every rank's sum when rank r holds `deal[r]` consecutive chunks.
std::vector<at::Tensor> SumsOver(const std::vector<int>& deal) {
  const int world = static_cast<int>(deal.size());
  std::vector<at::Tensor> sums(world);
  std::vector<OrderedSumReducer> reducers(world, MakeReducer());
  std::vector<int> first(world, 0);
  for (int r = 1; r < world; ++r) first[r] = first[r - 1] + deal[r - 1];
  auto sum_on = [&](int rank, c10d::ProcessGroup* group) {
    at::Tensor rows = RankRows(first[rank], deal[rank]);
    absl::StatusOr<at::Tensor> sum = reducers[rank].SumChunks(rows, group);
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

at::Tensor InChunkOrder() {
  at::Tensor total = ChunkGradient(0) + 0.0f;
  for (int k = 1; k < kChunks; ++k) total = total + ChunkGradient(k);
  return total;
}

TEST(OrderedSumReducerTest, TheSumIsBitwiseTheSameAtOneToFourRanksEvenOrUneven) {
  const at::Tensor expected = InChunkOrder();
  // Another order of the same additions rounds otherwise: the check below
  // could fail.
  at::Tensor reversed = ChunkGradient(kChunks - 1) + 0.0f;
  for (int k = kChunks - 2; k >= 0; --k) reversed = reversed + ChunkGradient(k);
  ASSERT_FALSE(at::equal(reversed, expected));
  for (const std::vector<int>& deal : std::vector<std::vector<int>>{
           {12}, {6, 6}, {9, 3}, {4, 4, 4}, {5, 5, 2}, {3, 3, 3, 3}, {1, 2, 4, 5}}) {
    for (const at::Tensor& sum : SumsOver(deal)) {
      EXPECT_TRUE(at::equal(sum, expected)) << "deal of " << deal.size() << " ranks";
      // -0 comes out +0 at every world size.
      EXPECT_FALSE(std::signbit(sum[3].item<float>()));
    }
  }
}

TEST(OrderedSumReducerTest, OneCollectiveOfEveryChunkPerUpdate) {
  std::vector<OrderedSumReducer> reducers(2, MakeReducer());
  absl::Status status = RunOnLocalGroup(2, [&](int rank, c10d::ProcessGroup& group) {
    at::Tensor rows = RankRows(rank * 6, 6);
    return reducers[rank].SumChunks(rows, &group).status();
  });
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(reducers[0].stats().collectives, 1);
  EXPECT_EQ(reducers[0].stats().bytes, int64_t{kChunks} * kElements * 4);
  EXPECT_GT(reducers[0].stats().seconds, 0);
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
