#include "samplers/micro_batches.h"

#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

TEST(MicroBatchesTest, ConsecutiveSlotsOfEqualSize) {
  // A local batch of 8 in 4 micro-batches of 2.
  for (int64_t slot = 0; slot < 8; ++slot) EXPECT_EQ(MicroBatchOf(slot, 8, 4), slot / 2);
  EXPECT_EQ(MicroBatchRange(0, 8, 8, 4), std::make_pair(int64_t{0}, int64_t{2}));
  EXPECT_EQ(MicroBatchRange(3, 8, 8, 4), std::make_pair(int64_t{6}, int64_t{8}));
  // One micro-batch: the whole update.
  EXPECT_EQ(MicroBatchRange(0, 8, 8, 1), std::make_pair(int64_t{0}, int64_t{8}));
  EXPECT_EQ(MicroBatchOf(7, 8, 1), 0);
}

TEST(MicroBatchesTest, AShortLastUpdateFillsItsFirstMicroBatches) {
  // 5 slots of a local batch of 8 in 4 micro-batches: 2, 2, 1, 0.
  EXPECT_EQ(MicroBatchRange(2, 5, 8, 4), std::make_pair(int64_t{4}, int64_t{5}));
  EXPECT_EQ(MicroBatchRange(3, 5, 8, 4), std::make_pair(int64_t{5}, int64_t{5}));
  EXPECT_EQ(MicroBatchOf(4, 8, 4), 2);
  // A rank with no slots in the update: every micro-batch empty.
  EXPECT_EQ(MicroBatchRange(0, 0, 8, 4), std::make_pair(int64_t{0}, int64_t{0}));
}

TEST(MicroBatchesDeathTest, ALocalBatchThatDoesNotCutIsAProgrammingError) {
  EXPECT_DEATH(MicroBatchOf(0, 6, 4), "does not cut into 4");
}

}  // namespace
}  // namespace receipt_parity
