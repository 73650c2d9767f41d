#include "model/keyed_dropout.h"

#include <ATen/ATen.h>

#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

at::Tensor Keys(std::vector<int64_t> keys) { return at::tensor(keys, at::kLong); }

TEST(KeyedDropoutTest, AnExamplesMaskDoesNotDependOnItsPositionOrItsNeighbours) {
  const at::Tensor alone = KeyedDropoutMask(UpdateKeys(Keys({42}), 7), 64, 0.5, 9, 0);
  const at::Tensor among =
      KeyedDropoutMask(UpdateKeys(Keys({5, 6, 42, 8}), 7), 64, 0.5, 9, 0);
  EXPECT_TRUE(at::equal(alone[0], among[2]));
  EXPECT_FALSE(at::equal(among[0], among[1]));
}

TEST(KeyedDropoutTest, MasksChangeWithTheUpdateTheLayerAndTheSeed) {
  const at::Tensor keys = Keys({1, 2, 3});
  const at::Tensor base = KeyedDropoutMask(UpdateKeys(keys, 0), 128, 0.5, 9, 0);
  EXPECT_TRUE(at::equal(base, KeyedDropoutMask(UpdateKeys(keys, 0), 128, 0.5, 9, 0)));
  EXPECT_FALSE(at::equal(base, KeyedDropoutMask(UpdateKeys(keys, 1), 128, 0.5, 9, 0)));
  EXPECT_FALSE(at::equal(base, KeyedDropoutMask(UpdateKeys(keys, 0), 128, 0.5, 9, 1)));
  EXPECT_FALSE(at::equal(base, KeyedDropoutMask(UpdateKeys(keys, 0), 128, 0.5, 10, 0)));
}

TEST(KeyedDropoutTest, DropsAboutPOfTheElements) {
  std::vector<int64_t> ids(200);
  for (int i = 0; i < 200; ++i) ids[i] = 1000 + i;
  for (double p : {0.1, 0.3, 0.5}) {
    const at::Tensor mask = KeyedDropoutMask(UpdateKeys(Keys(ids), 3), 500, p, 1, 0);
    const double dropped = 1.0 - mask.mean().item<double>();
    // 100 000 Bernoulli(p) draws: the standard deviation is below 0.0016.
    EXPECT_NEAR(dropped, p, 0.01) << p;
  }
}

TEST(KeyedDropoutTest, ScalesKeptElementsInTrainingAndIsIdentityOtherwise) {
  KeyedDropout drop(0.25, 4, 0);
  const at::Tensor x = at::ones({3, 2, 4});
  const at::Tensor keys = UpdateKeys(Keys({10, 11, 12}), 5);
  const at::Tensor y = drop->forward(x, keys);
  const at::Tensor mask = KeyedDropoutMask(keys, 8, 0.25, 4, 0).view({3, 2, 4});
  EXPECT_TRUE(at::allclose(y, mask / 0.75));
  // No keys (not a training update), eval mode, p = 0: unchanged.
  EXPECT_TRUE(at::equal(drop->forward(x, at::Tensor()), x));
  drop->eval();
  EXPECT_TRUE(at::equal(drop->forward(x, keys), x));
  KeyedDropout none(0.0, 4, 0);
  EXPECT_TRUE(at::equal(none->forward(x, keys), x));
}

TEST(KeyedDropoutTest, UpdateKeysAreElementwiseAndDifferByUpdate) {
  const at::Tensor a = UpdateKeys(Keys({1, 2}), 0);
  EXPECT_EQ(a.scalar_type(), at::kLong);
  EXPECT_EQ(a[1].item<int64_t>(), UpdateKeys(Keys({2}), 0)[0].item<int64_t>());
  EXPECT_NE(a[0].item<int64_t>(), UpdateKeys(Keys({1}), 1)[0].item<int64_t>());
  EXPECT_FALSE(UpdateKeys(at::Tensor(), 3).defined());
}

}  // namespace
}  // namespace receipt_parity
