#include "trainer/progress_log.h"

#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

TEST(ProgressLogTest, OnlyTheWriterLogsEveryNUpdates) {
  const ProgressLog writer({/*writer=*/true, 10, 0, 3});
  EXPECT_TRUE(writer.Due(10));
  EXPECT_TRUE(writer.Due(20));
  EXPECT_FALSE(writer.Due(5));
  EXPECT_FALSE(ProgressLog({/*writer=*/false, 10, 0, 3}).Due(10));
  EXPECT_FALSE(ProgressLog({/*writer=*/true, 0, 0, 3}).Due(10));
}

TEST(ProgressLogTest, PlansEpochsTimesUpdatesOrMaxUpdates) {
  // 10 of 6 x 3 = 18 done, 4 updates in 2 s: 2 updates/s, 8 left: 4 s.
  EXPECT_EQ(ProgressLog({true, 10, 0, 3}).Line(10, 6, 1, 0.5, 4, 2.0),
            "update 10/18 (epoch 1) rank-0 loss share 0.5, 2 updates/s, ETA 4 s");
  EXPECT_EQ(ProgressLog({true, 10, 12, 3}).Line(10, 6, 1, 0.25, 4, 2.0),
            "update 10/12 (epoch 1) rank-0 loss share 0.25, 2 updates/s, ETA 1 s");
}

TEST(ProgressLogTest, EtaIsNeverNegative) {
  EXPECT_EQ(ProgressLog({true, 1, 5, 3}).Line(6, 6, 2, 1, 1, 1.0),
            "update 6/5 (epoch 2) rank-0 loss share 1, 1 updates/s, ETA 0 s");
}

}  // namespace
}  // namespace receipt_parity
