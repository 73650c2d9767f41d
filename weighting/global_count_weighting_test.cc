#include "weighting/global_count_weighting.h"

#include <numeric>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;

std::vector<WeightedSlot> Valid(int n) {
  return std::vector<WeightedSlot>(n, WeightedSlot{0, true});
}

TEST(GlobalCountWeightingTest, UnequalSplitWeighsEveryExampleByTheGlobalCount) {
  GlobalCountWeighting weighting;
  UpdateComposition update{{Valid(3), Valid(1)}, {}};
  EXPECT_THAT(weighting.Weights(update, 0),
              ElementsAre(DoubleEq(0.25), DoubleEq(0.25), DoubleEq(0.25)));
  EXPECT_THAT(weighting.Weights(update, 1), ElementsAre(DoubleEq(0.25)));
}

TEST(GlobalCountWeightingTest, MaskedSlotsWeighZeroAndDoNotCount) {
  GlobalCountWeighting weighting;
  UpdateComposition update{
      {{{0, true}, {1, true}, {0, false}}, {{1, true}, {1, false}}}, {}};
  const double third = 1.0 / 3.0;
  EXPECT_THAT(weighting.Weights(update, 0),
              ElementsAre(DoubleEq(third), DoubleEq(third), DoubleEq(0)));
  EXPECT_THAT(weighting.Weights(update, 1),
              ElementsAre(DoubleEq(third), DoubleEq(0)));
}

TEST(GlobalCountWeightingTest, EmptyRankAndEmptyUpdateGetZeros) {
  GlobalCountWeighting weighting;
  UpdateComposition update{{Valid(4), {}}, {}};
  EXPECT_TRUE(weighting.Weights(update, 1).empty());
  UpdateComposition all_masked{{{{0, false}}, {{1, false}, {0, false}}}, {}};
  EXPECT_THAT(weighting.Weights(all_masked, 0), ElementsAre(0.0));
  EXPECT_THAT(weighting.Weights(all_masked, 1), ElementsAre(0.0, 0.0));
}

TEST(GlobalCountWeightingTest, WeightsOfAllRanksSumToOne) {
  GlobalCountWeighting weighting;
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const int world = 1 + static_cast<int>(rng() % 5);
    UpdateComposition update;
    int valid = 0;
    for (int r = 0; r < world; ++r) {
      update.by_rank.emplace_back();
      const int slots = static_cast<int>(rng() % 6);
      for (int s = 0; s < slots; ++s) {
        const bool is_valid = rng() % 4 != 0;
        valid += is_valid ? 1 : 0;
        update.by_rank.back().push_back({0, is_valid});
      }
    }
    double total = 0;
    for (int r = 0; r < world; ++r) {
      const std::vector<double> w = weighting.Weights(update, r);
      ASSERT_EQ(w.size(), update.by_rank[r].size());
      total = std::accumulate(w.begin(), w.end(), total);
    }
    EXPECT_NEAR(total, valid > 0 ? 1.0 : 0.0, 1e-12) << "trial " << trial;
  }
}

}  // namespace
}  // namespace receipt_parity
