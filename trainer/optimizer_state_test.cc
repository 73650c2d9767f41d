#include "trainer/optimizer_state.h"

#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using Tensors = std::map<std::string, at::Tensor>;

torch::nn::Linear MakeModel() {
  torch::manual_seed(7);
  return torch::nn::Linear(3, 2);
}

// A copy of `model` with the same parameters, for a second optimizer.
torch::nn::Linear CopyOf(const torch::nn::Linear& model) {
  torch::nn::Linear copy(3, 2);
  torch::NoGradGuard no_grad;
  copy->weight.copy_(model->weight);
  copy->bias.copy_(model->bias);
  return copy;
}

// The same made-up gradients for every model at update `update`, then a step.
void Step(torch::nn::Linear& model, torch::optim::Optimizer& optimizer, int update) {
  for (at::Tensor& p : model->parameters()) {
    p.mutable_grad() =
        at::arange(p.numel(), at::kFloat).reshape(p.sizes()) * 0.01f * (update + 1) - 0.02f;
  }
  optimizer.step();
}

bool SameParameters(const torch::nn::Linear& a, const torch::nn::Linear& b) {
  return at::equal(a->weight, b->weight) && at::equal(a->bias, b->bias);
}

std::vector<std::string> Names(const Tensors& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : tensors) names.push_back(name);
  return names;
}

// Two steps on one optimizer, its state saved and restored into a fresh
// one over a copy of the model: the next step is bitwise the same on both;
// a fresh optimizer without the state steps differently.
template <typename Optimizer, typename Options>
void ExpectRoundTripGivesIdenticalNextSteps(const Options& options) {
  torch::nn::Linear model = MakeModel();
  Optimizer optimizer(model->parameters(), options);
  Step(model, optimizer, 0);
  Step(model, optimizer, 1);
  absl::StatusOr<Tensors> saved = OptimizerStateTensors(*model, optimizer);
  ASSERT_TRUE(saved.ok()) << saved.status();

  torch::nn::Linear resumed = CopyOf(model);
  Optimizer restored(resumed->parameters(), options);
  ASSERT_TRUE(RestoreOptimizerState(*resumed, restored, *saved).ok());
  torch::nn::Linear fresh = CopyOf(model);
  Optimizer without_state(fresh->parameters(), options);

  for (int update = 2; update < 4; ++update) {
    Step(model, optimizer, update);
    Step(resumed, restored, update);
    Step(fresh, without_state, update);
    EXPECT_TRUE(SameParameters(model, resumed)) << "update " << update;
  }
  EXPECT_FALSE(SameParameters(model, fresh));
}

TEST(OptimizerStateTest, SgdMomentumRoundTripGivesIdenticalNextSteps) {
  ExpectRoundTripGivesIdenticalNextSteps<torch::optim::SGD>(
      torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.01));
}

TEST(OptimizerStateTest, AdamwRoundTripGivesIdenticalNextSteps) {
  ExpectRoundTripGivesIdenticalNextSteps<torch::optim::AdamW>(
      torch::optim::AdamWOptions(0.01));
  ExpectRoundTripGivesIdenticalNextSteps<torch::optim::AdamW>(
      torch::optim::AdamWOptions(0.01).amsgrad(true));
}

TEST(OptimizerStateTest, NamesAreParameterAndBuffer) {
  torch::nn::Linear model = MakeModel();
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  absl::StatusOr<Tensors> before = OptimizerStateTensors(*model, sgd);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_TRUE(before->empty());  // no state before the first step
  Step(model, sgd, 0);
  EXPECT_THAT(Names(*OptimizerStateTensors(*model, sgd)),
              UnorderedElementsAre("optimizer/weight/momentum_buffer",
                                   "optimizer/bias/momentum_buffer"));

  torch::optim::AdamW adamw(model->parameters(),
                            torch::optim::AdamWOptions(0.01).amsgrad(true));
  Step(model, adamw, 0);
  absl::StatusOr<Tensors> adam_state = OptimizerStateTensors(*model, adamw);
  ASSERT_TRUE(adam_state.ok()) << adam_state.status();
  EXPECT_THAT(Names(*adam_state),
              UnorderedElementsAre(
                  "optimizer/weight/step", "optimizer/weight/exp_avg",
                  "optimizer/weight/exp_avg_sq", "optimizer/weight/max_exp_avg_sq",
                  "optimizer/bias/step", "optimizer/bias/exp_avg",
                  "optimizer/bias/exp_avg_sq", "optimizer/bias/max_exp_avg_sq"));
  EXPECT_EQ(adam_state->at("optimizer/bias/step").item<int64_t>(), 1);
}

TEST(OptimizerStateTest, AShapeThatDiffersIsNamed) {
  torch::nn::Linear model = MakeModel();
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  const Tensors saved = {{"optimizer/weight/momentum_buffer", at::zeros({5})}};
  absl::Status status = RestoreOptimizerState(*model, sgd, saved);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("optimizer/weight/momentum_buffer"));
}

TEST(OptimizerStateTest, OtherOptimizersAreUnimplemented) {
  torch::nn::Linear model = MakeModel();
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(0.01));
  EXPECT_EQ(OptimizerStateTensors(*model, adam).status().code(),
            absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace receipt_parity
