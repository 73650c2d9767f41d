#include "weighting/micro_batch_mean_weighting.h"

#include <vector>

#include "gtest/gtest.h"
#include "weighting/global_count_weighting.h"

namespace receipt_parity {
namespace {

// `valid` flags of one rank's slots, cut into micro-batches of `size`.
std::vector<WeightedSlot> Slots(const std::vector<bool>& valid, int size) {
  std::vector<WeightedSlot> slots;
  for (size_t i = 0; i < valid.size(); ++i) {
    slots.push_back(WeightedSlot{0, valid[i], static_cast<int>(i) / size});
  }
  return slots;
}

TEST(MicroBatchMeanWeightingTest, FullMicroBatchesGiveTheGlobalCountWeights) {
  UpdateComposition update;
  update.micro_batches = 2;
  update.by_rank = {Slots({true, true, true, true}, 2), Slots({true, true, true, true}, 2)};
  const MicroBatchMeanWeighting mean;
  const GlobalCountWeighting global;
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(mean.Weights(update, r), global.Weights(update, r)) << "rank " << r;
    for (double w : mean.Weights(update, r)) EXPECT_EQ(w, 1.0 / 8);
  }
}

// A masked tail: micro-batches with fewer valid slots weigh their examples
// more than 1/|A|; the weights of the update still add up to 1 only when
// every micro-batch has one valid slot at least.
TEST(MicroBatchMeanWeightingTest, AMaskedTailWeighsEmptierMicroBatchesMore) {
  UpdateComposition update;
  update.micro_batches = 4;
  update.by_rank = {Slots({true, true, true, true, true, false, false, false}, 2)};
  const std::vector<double> w = MicroBatchMeanWeighting().Weights(update, 0);
  ASSERT_EQ(w.size(), 8u);
  EXPECT_EQ(w[0], 1.0 / 8);   // micro-batch 0: 2 valid, 1 / (2 * 4)
  EXPECT_EQ(w[4], 1.0 / 4);   // micro-batch 2: 1 valid, 1 / (1 * 4)
  EXPECT_EQ(w[5], 0.0);       // masked
  EXPECT_EQ(w[7], 0.0);       // micro-batch 3: none valid
  const std::vector<double> global = GlobalCountWeighting().Weights(update, 0);
  EXPECT_EQ(global[0], 1.0 / 5);
  EXPECT_NE(w, global);
}

TEST(MicroBatchMeanWeightingTest, EveryRankDividesByTheWorldSize) {
  UpdateComposition update;
  update.micro_batches = 1;
  update.by_rank = {Slots({true, true, true}, 3), Slots({true}, 1)};
  EXPECT_EQ(MicroBatchMeanWeighting().Weights(update, 0), std::vector<double>(3, 1.0 / 6));
  EXPECT_EQ(MicroBatchMeanWeighting().Weights(update, 1), std::vector<double>(1, 1.0 / 2));
}

}  // namespace
}  // namespace receipt_parity
