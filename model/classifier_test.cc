#include "model/classifier.h"

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/weighted_loss.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

ModelConfig Cnn() {
  ModelConfig config;
  config.set_architecture("cnn");
  config.add_conv_channels(4);
  config.add_conv_channels(8);
  config.add_hidden_units(16);
  return config;
}

TEST(ClassifierTest, SameSeedGivesBitwiseEqualParameters) {
  auto a = BuildClassifier(Cnn(), {1, 16, 16}, 4, 7);
  auto b = BuildClassifier(Cnn(), {1, 16, 16}, 4, 7);
  auto c = BuildClassifier(Cnn(), {1, 16, 16}, 4, 8);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(ParameterHash(**a), ParameterHash(**b));
  EXPECT_NE(ParameterHash(**a), ParameterHash(**c));
  EXPECT_EQ(ModelRevision(**a), ModelRevision(**b));
  EXPECT_THAT(ModelRevision(**a), HasSubstr("cnn(conv=4,8;hidden=16"));
}

TEST(ClassifierTest, ForwardGivesLogitsPerExampleAndAcceptsEmptyBatches) {
  auto model = BuildClassifier(Cnn(), {1, 16, 16}, 4, 1);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ((*model)->forward(at::rand({3, 1, 16, 16})).sizes(),
            (std::vector<int64_t>{3, 4}));
  EXPECT_EQ((*model)->forward(at::rand({0, 1, 16, 16})).size(0), 0);
}

TEST(ClassifierTest, BadConfigsNameTheField) {
  ModelConfig unknown;
  unknown.set_architecture("transformer");
  EXPECT_THAT(BuildClassifier(unknown, {3}, 2, 0).status().message(),
              HasSubstr("model.architecture"));
  EXPECT_THAT(BuildClassifier(Cnn(), {1, 18, 18}, 4, 0).status().message(),
              HasSubstr("divisible by 4"));
  ModelConfig linear;
  linear.set_architecture("linear");
  linear.add_hidden_units(3);
  EXPECT_THAT(BuildClassifier(linear, {3}, 2, 0).status().message(),
              HasSubstr("model.hidden_units"));
}

TEST(ClassifierTest, KeyedDropoutActsInUpdatesOnlyAndKeepsAnExamplesOutputWhereverItSits) {
  ModelConfig with_dropout = Cnn();
  with_dropout.set_dropout(0.5);
  auto plain = BuildClassifier(Cnn(), {1, 16, 16}, 4, 7);
  auto keyed = BuildClassifier(with_dropout, {1, 16, 16}, 4, 7);
  ASSERT_TRUE(plain.ok() && keyed.ok());
  // Same parameters (dropout has none); the revision says keyed dropout.
  EXPECT_EQ(ParameterHash(**plain), ParameterHash(**keyed));
  EXPECT_THAT((*keyed)->Describe(), HasSubstr(";keyed_dropout=0.5)"));
  EXPECT_THAT((*plain)->Describe(), ::testing::Not(HasSubstr("dropout")));

  const at::Tensor images = at::rand({4, 1, 16, 16});
  const at::Tensor keys = at::tensor(std::vector<int64_t>{11, 12, 13, 14}, at::kLong);
  // Outside an update (no keys) it is the plain model.
  EXPECT_TRUE(at::equal((*keyed)->forward(images), (*plain)->forward(images)));
  const at::Tensor dropped = (*keyed)->ForwardForUpdate(images, keys);
  EXPECT_FALSE(at::allclose(dropped, (*plain)->forward(images)));
  // Example 2 alone, and first in another batch: the same logits.
  const at::Tensor alone = (*keyed)->ForwardForUpdate(images.narrow(0, 2, 1), keys.narrow(0, 2, 1));
  EXPECT_TRUE(at::allclose(alone[0], dropped[2], 1e-6, 1e-6));
  // In eval mode the keys change nothing.
  (*keyed)->eval();
  EXPECT_TRUE(at::equal((*keyed)->ForwardForUpdate(images, keys), (*plain)->forward(images)));
}

TEST(WeightedBackwardTest, GlobalCountWeightsGiveTheMeanLossGradient) {
  ModelConfig linear;
  linear.set_architecture("linear");
  auto model = BuildClassifier(linear, {3}, 2, 37);
  ASSERT_TRUE(model.ok());
  at::Tensor x = at::rand({4, 3});
  at::Tensor y = at::tensor({0, 1, 1, 0}, at::kLong);
  ASSERT_TRUE(WeightedBackward(**model, x, y, {0.25, 0.25, 0.25, 0.25}).ok());
  std::vector<at::Tensor> weighted;
  for (const at::Tensor& g : Gradients(**model)) weighted.push_back(g.clone());

  (*model)->zero_grad();
  at::cross_entropy_loss((*model)->forward(x), y).backward();
  std::vector<at::Tensor> mean = Gradients(**model);
  ASSERT_EQ(weighted.size(), mean.size());
  for (size_t i = 0; i < mean.size(); ++i) {
    EXPECT_TRUE(at::allclose(weighted[i], mean[i], 1e-6, 1e-7));
  }
}

TEST(WeightedBackwardTest, EmptyBatchLeavesDefinedZeroGradients) {
  ModelConfig linear;
  linear.set_architecture("linear");
  auto model = BuildClassifier(linear, {3}, 2, 1);
  ASSERT_TRUE(model.ok());
  auto result = WeightedBackward(**model, at::zeros({0, 3}),
                                 at::zeros({0}, at::kLong), {});
  ASSERT_TRUE(result.ok()) << result.status();
  for (const at::Tensor& g : Gradients(**model)) {
    ASSERT_TRUE(g.defined());
    EXPECT_EQ(g.abs().sum().item<float>(), 0.0f);
  }
  EXPECT_FALSE(WeightedBackward(**model, at::zeros({2, 3}),
                                at::zeros({2}, at::kLong), {1.0})
                   .ok());
}

}  // namespace
}  // namespace receipt_parity
