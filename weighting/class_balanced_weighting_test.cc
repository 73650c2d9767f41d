#include "weighting/class_balanced_weighting.h"

#include <numeric>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "weighting/global_count_weighting.h"

namespace receipt_parity {
namespace {

using ::testing::DoubleEq;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

ClassBalancedWeighting Make(double power, double smoothing) {
  absl::StatusOr<ClassBalancedWeighting> weighting =
      ClassBalancedWeighting::Create(power, smoothing);
  EXPECT_TRUE(weighting.ok()) << weighting.status();
  return *weighting;
}

double Sum(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}

// Class 0 has 30 training examples, class 1 (rare) has 10. Rank 0 holds
// labels [0, 0, 1], rank 1 holds [1]. Inverse frequency: c = (1/30, 1/10);
// the update's sum is 2/30 + 2/10 = 8/30, so a class-0 example weighs
// (1/30) / (8/30) = 1/8 and a class-1 example (1/10) / (8/30) = 3/8.
TEST(ClassBalancedWeightingTest, InverseFrequencyNormalisedOverTheUpdate) {
  ClassBalancedWeighting weighting = Make(1.0, 0.0);
  UpdateComposition update{{{{0, true}, {0, true}, {1, true}}, {{1, true}}},
                           {30, 10}};
  const std::vector<double> w0 = weighting.Weights(update, 0);
  const std::vector<double> w1 = weighting.Weights(update, 1);
  EXPECT_THAT(w0, ElementsAre(DoubleEq(1.0 / 8), DoubleEq(1.0 / 8),
                              DoubleEq(3.0 / 8)));
  EXPECT_THAT(w1, ElementsAre(DoubleEq(3.0 / 8)));
  EXPECT_NEAR(Sum(w0) + Sum(w1), 1.0, 1e-15);
}

TEST(ClassBalancedWeightingTest, PowerAndSmoothingShapeTheClassWeights) {
  ClassBalancedWeighting sqrt_weighting = Make(0.5, 0.0);
  EXPECT_THAT(sqrt_weighting.ClassWeights({4, 16}),
              ElementsAre(DoubleEq(0.5), DoubleEq(0.25)));
  ClassBalancedWeighting smoothed = Make(1.0, 2.0);
  EXPECT_THAT(smoothed.ClassWeights({2, 0}),
              ElementsAre(DoubleEq(0.25), DoubleEq(0.5)));
}

TEST(ClassBalancedWeightingTest, PowerZeroEqualsGlobalCount) {
  ClassBalancedWeighting uniform = Make(0.0, 0.0);
  GlobalCountWeighting global_count;
  UpdateComposition update{
      {{{0, true}, {1, true}, {1, false}}, {{1, true}}, {}}, {90, 10}};
  for (int r = 0; r < 3; ++r) {
    const std::vector<double> expected = global_count.Weights(update, r);
    const std::vector<double> actual = uniform.Weights(update, r);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
      EXPECT_THAT(actual[i], DoubleNear(expected[i], 1e-15));
    }
  }
}

TEST(ClassBalancedWeightingTest, MaskedSlotsWeighZeroAndEmptyUpdateIsZero) {
  ClassBalancedWeighting weighting = Make(1.0, 0.0);
  UpdateComposition update{{{{0, true}, {1, false}}, {{1, true}}}, {30, 10}};
  const std::vector<double> w0 = weighting.Weights(update, 0);
  EXPECT_EQ(w0[1], 0.0);
  EXPECT_NEAR(Sum(w0) + Sum(weighting.Weights(update, 1)), 1.0, 1e-15);
  UpdateComposition masked{{{{0, false}}, {}}, {30, 10}};
  EXPECT_THAT(weighting.Weights(masked, 0), ElementsAre(0.0));
}

TEST(ClassBalancedWeightingTest, RejectsBadOptions) {
  EXPECT_THAT(ClassBalancedWeighting::Create(-1, 0).status().message(),
              HasSubstr("class_balanced.power"));
  EXPECT_THAT(
      ClassBalancedWeighting::Create(std::nan(""), 0).status().message(),
      HasSubstr("class_balanced.power"));
  EXPECT_THAT(ClassBalancedWeighting::Create(1, -0.5).status().message(),
              HasSubstr("class_balanced.smoothing"));
}

TEST(ClassBalancedWeightingDeathTest, LabelOutsideTheClassesIsABug) {
  ClassBalancedWeighting weighting = Make(1.0, 0.0);
  UpdateComposition update{{{{2, true}}}, {30, 10}};
  EXPECT_DEATH(weighting.Weights(update, 0), "label 2 outside the 2 classes");
}

TEST(ClassBalancedWeightingDeathTest, ClassWithoutExamplesCannotBeWeighed) {
  ClassBalancedWeighting weighting = Make(1.0, 0.0);
  UpdateComposition update{{{{1, true}}}, {30, 0}};
  EXPECT_DEATH(weighting.Weights(update, 0), "cannot be weighed");
}

}  // namespace
}  // namespace receipt_parity
