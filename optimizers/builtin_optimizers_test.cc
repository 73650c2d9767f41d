#include "optimizers/builtin_optimizers.h"

#include <map>
#include <memory>
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

// A linear layer's parameters by name: "weight" [2, 3], "bias" [2].
struct Model {
  explicit Model(uint64_t seed = 7) {
    torch::manual_seed(seed);
    layer = torch::nn::Linear(3, 2);
  }
  Model(const Model& other) : Model() {
    torch::NoGradGuard no_grad;
    layer->weight.copy_(other.layer->weight);
    layer->bias.copy_(other.layer->bias);
  }
  std::vector<NamedParameter> parameters() const {
    return {{"weight", layer->weight}, {"bias", layer->bias}};
  }
  bool SameAs(const Model& other) const {
    return at::equal(layer->weight, other.layer->weight) &&
           at::equal(layer->bias, other.layer->bias);
  }
  torch::nn::Linear layer{nullptr};
};

// The same made-up gradients for every model at update `update`, then a step.
void Step(Model& model, torch::optim::Optimizer& optimizer, int update) {
  for (const NamedParameter& p : model.parameters()) {
    p.tensor.mutable_grad() =
        at::arange(p.tensor.numel(), at::kFloat).reshape(p.tensor.sizes()) * 0.01f *
            (update + 1) -
        0.02f;
  }
  optimizer.step();
}

std::unique_ptr<torch::optim::Optimizer> Built(const OptimizerPlugin& plugin,
                                               const Model& model) {
  absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> built =
      plugin.Build(model.parameters());
  EXPECT_TRUE(built.ok()) << built.status();
  return built.ok() ? *std::move(built) : nullptr;
}

// Two steps, the state saved and restored into a fresh optimizer over a
// copy of the model: the next steps are bitwise the same; a fresh optimizer
// without the state steps differently.
void ExpectRoundTripGivesIdenticalNextSteps(const OptimizerPlugin& plugin) {
  Model model;
  std::unique_ptr<torch::optim::Optimizer> optimizer = Built(plugin, model);
  ASSERT_NE(optimizer, nullptr);
  Step(model, *optimizer, 0);
  Step(model, *optimizer, 1);
  absl::StatusOr<OptimizerState> saved = plugin.SaveState(model.parameters(), *optimizer);
  ASSERT_TRUE(saved.ok()) << saved.status();

  Model resumed(model);
  std::unique_ptr<torch::optim::Optimizer> restored = Built(plugin, resumed);
  ASSERT_TRUE(plugin.RestoreState(resumed.parameters(), *restored, *saved).ok());
  Model fresh(model);
  std::unique_ptr<torch::optim::Optimizer> without_state = Built(plugin, fresh);

  for (int update = 2; update < 4; ++update) {
    Step(model, *optimizer, update);
    Step(resumed, *restored, update);
    Step(fresh, *without_state, update);
    EXPECT_TRUE(model.SameAs(resumed)) << "update " << update;
  }
  EXPECT_FALSE(model.SameAs(fresh));
}

std::vector<std::string> Names(const OptimizerState& state) {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : state) names.push_back(name);
  return names;
}

TEST(BuiltinOptimizersTest, EveryBuiltinResumesBitwise) {
  SgdOptions sgd;
  sgd.set_lr(0.1);
  sgd.set_momentum(0.9);
  sgd.set_weight_decay(0.01);
  ExpectRoundTripGivesIdenticalNextSteps(**SgdOptimizer::Create(sgd));
  sgd.set_nesterov(true);
  ExpectRoundTripGivesIdenticalNextSteps(**SgdOptimizer::Create(sgd));
  AdamOptions adam;
  adam.set_lr(0.01);
  ExpectRoundTripGivesIdenticalNextSteps(**AdamOptimizer::Create(adam));
  adam.set_amsgrad(true);
  ExpectRoundTripGivesIdenticalNextSteps(**AdamOptimizer::Create(adam));
  AdamWOptions adamw;
  adamw.set_lr(0.01);
  ExpectRoundTripGivesIdenticalNextSteps(**AdamOptimizer::Create(adamw));
  adamw.set_amsgrad(true);
  adamw.set_weight_decay_excludes_biases_and_norms(true);
  ExpectRoundTripGivesIdenticalNextSteps(**AdamOptimizer::Create(adamw));
}

// Fields left out take PyTorch's defaults (LibTorch's options' own).
TEST(BuiltinOptimizersTest, UnsetFieldsArePyTorchsDefaults) {
  const SgdOptions sgd = (*SgdOptimizer::Create(SgdOptions()))->options();
  const torch::optim::SGDOptions torch_sgd(1e-3);
  EXPECT_EQ(sgd.lr(), 1e-3);
  EXPECT_EQ(sgd.momentum(), torch_sgd.momentum());
  EXPECT_EQ(sgd.dampening(), torch_sgd.dampening());
  EXPECT_EQ(sgd.weight_decay(), torch_sgd.weight_decay());
  EXPECT_EQ(sgd.nesterov(), torch_sgd.nesterov());

  const torch::optim::AdamOptions torch_adam;
  const AdamOptions adam = (*AdamOptimizer::Create(AdamOptions()))->options();
  EXPECT_EQ(adam.lr(), torch_adam.lr());
  EXPECT_EQ(adam.beta1(), std::get<0>(torch_adam.betas()));
  EXPECT_EQ(adam.beta2(), std::get<1>(torch_adam.betas()));
  EXPECT_EQ(adam.eps(), torch_adam.eps());
  EXPECT_EQ(adam.weight_decay(), torch_adam.weight_decay());
  EXPECT_EQ(adam.amsgrad(), torch_adam.amsgrad());

  const torch::optim::AdamWOptions torch_adamw;
  std::unique_ptr<AdamOptimizer> adamw = *AdamOptimizer::Create(AdamWOptions());
  EXPECT_TRUE(adamw->decoupled());
  EXPECT_EQ(adamw->options().weight_decay(), torch_adamw.weight_decay());  // 0.01
  EXPECT_EQ(adamw->options().lr(), torch_adamw.lr());
}

// A field written is used as it is, zero included.
TEST(BuiltinOptimizersTest, ZeroMeansZero) {
  AdamWOptions adamw;
  adamw.set_weight_decay(0);
  EXPECT_EQ((*AdamOptimizer::Create(adamw))->options().weight_decay(), 0);
  AdamOptions adam;
  adam.set_beta1(0);
  EXPECT_EQ((*AdamOptimizer::Create(adam))->options().beta1(), 0);
}

TEST(BuiltinOptimizersTest, TheOptimizerBuiltIsLibTorchsWithTheseOptions) {
  AdamWOptions options;
  options.set_lr(0.02);
  options.set_weight_decay(0.5);
  Model model;
  std::unique_ptr<torch::optim::Optimizer> built =
      Built(**AdamOptimizer::Create(options), model);
  auto* adamw = dynamic_cast<torch::optim::AdamW*>(built.get());
  ASSERT_NE(adamw, nullptr);
  ASSERT_EQ(adamw->param_groups().size(), 1u);
  const auto& group = static_cast<const torch::optim::AdamWOptions&>(
      adamw->param_groups()[0].options());
  EXPECT_EQ(group.lr(), 0.02);
  EXPECT_EQ(group.weight_decay(), 0.5);

  // The same steps as LibTorch's AdamW built by hand.
  Model by_hand(model);
  torch::optim::AdamW reference({by_hand.layer->weight, by_hand.layer->bias},
                                torch::optim::AdamWOptions(0.02).weight_decay(0.5));
  for (int update = 0; update < 3; ++update) {
    Step(model, *built, update);
    Step(by_hand, reference, update);
  }
  EXPECT_TRUE(model.SameAs(by_hand));
}

TEST(BuiltinOptimizersTest, BiasesAndNormsCanBeLeftWithoutWeightDecay) {
  Model model;
  const auto [decay, no_decay] = WeightDecayGroups(model.parameters(), true);
  ASSERT_EQ(decay.size(), 1u);
  EXPECT_TRUE(decay[0].is_same(model.layer->weight));
  ASSERT_EQ(no_decay.size(), 1u);
  EXPECT_TRUE(no_decay[0].is_same(model.layer->bias));
  EXPECT_EQ(WeightDecayGroups(model.parameters(), false).first.size(), 2u);

  SgdOptions options;
  options.set_lr(0.1);
  options.set_weight_decay(0.5);
  options.set_weight_decay_excludes_biases_and_norms(true);
  std::unique_ptr<torch::optim::Optimizer> grouped =
      Built(**SgdOptimizer::Create(options), model);
  ASSERT_EQ(grouped->param_groups().size(), 2u);
  EXPECT_EQ(static_cast<const torch::optim::SGDOptions&>(grouped->param_groups()[0].options())
                .weight_decay(),
            0.5);
  EXPECT_EQ(static_cast<const torch::optim::SGDOptions&>(grouped->param_groups()[1].options())
                .weight_decay(),
            0);
  // The weight steps as with decay, the bias as without.
  Model with_decay(model), without_decay(model);
  options.set_weight_decay_excludes_biases_and_norms(false);
  std::unique_ptr<torch::optim::Optimizer> all = Built(**SgdOptimizer::Create(options), with_decay);
  options.set_weight_decay(0);
  std::unique_ptr<torch::optim::Optimizer> none =
      Built(**SgdOptimizer::Create(options), without_decay);
  Step(model, *grouped, 0);
  Step(with_decay, *all, 0);
  Step(without_decay, *none, 0);
  EXPECT_TRUE(at::equal(model.layer->weight, with_decay.layer->weight));
  EXPECT_TRUE(at::equal(model.layer->bias, without_decay.layer->bias));
  EXPECT_FALSE(at::equal(model.layer->bias, with_decay.layer->bias));
}

TEST(BuiltinOptimizersTest, StateNamesAreParameterAndBuffer) {
  SgdOptions sgd;
  sgd.set_momentum(0.9);
  std::unique_ptr<SgdOptimizer> plugin = *SgdOptimizer::Create(sgd);
  Model model;
  std::unique_ptr<torch::optim::Optimizer> optimizer = Built(*plugin, model);
  absl::StatusOr<OptimizerState> before = plugin->SaveState(model.parameters(), *optimizer);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_TRUE(before->empty());  // no state before the first step
  Step(model, *optimizer, 0);
  EXPECT_THAT(Names(*plugin->SaveState(model.parameters(), *optimizer)),
              UnorderedElementsAre("weight/momentum_buffer", "bias/momentum_buffer"));

  AdamWOptions options;
  options.set_amsgrad(true);
  std::unique_ptr<AdamOptimizer> adamw = *AdamOptimizer::Create(options);
  std::unique_ptr<torch::optim::Optimizer> adam_optimizer = Built(*adamw, model);
  Step(model, *adam_optimizer, 0);
  absl::StatusOr<OptimizerState> state = adamw->SaveState(model.parameters(), *adam_optimizer);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_THAT(Names(*state),
              UnorderedElementsAre("weight/step", "weight/exp_avg", "weight/exp_avg_sq",
                                   "weight/max_exp_avg_sq", "bias/step", "bias/exp_avg",
                                   "bias/exp_avg_sq", "bias/max_exp_avg_sq"));
  EXPECT_EQ(state->at("bias/step").item<int64_t>(), 1);
}

TEST(BuiltinOptimizersTest, AShapeThatDiffersIsNamed) {
  SgdOptions sgd;
  sgd.set_momentum(0.9);
  std::unique_ptr<SgdOptimizer> plugin = *SgdOptimizer::Create(sgd);
  Model model;
  std::unique_ptr<torch::optim::Optimizer> optimizer = Built(*plugin, model);
  const OptimizerState saved = {{"weight/momentum_buffer", at::zeros({5})}};
  absl::Status status = plugin->RestoreState(model.parameters(), *optimizer, saved);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("weight/momentum_buffer"));
}

// A recipe change may turn amsgrad on (train --allow_recipe_change): the
// state saved without it lacks the running maximum, which is named rather
// than left for LibTorch's step to fail on.
TEST(BuiltinOptimizersTest, AmsgradRefusesAStateSavedWithoutIt) {
  std::unique_ptr<AdamOptimizer> plain = *AdamOptimizer::Create(AdamOptions());
  Model model;
  std::unique_ptr<torch::optim::Optimizer> optimizer = Built(*plain, model);
  Step(model, *optimizer, 0);
  const OptimizerState saved = *plain->SaveState(model.parameters(), *optimizer);
  AdamOptions with_max;
  with_max.set_amsgrad(true);
  std::unique_ptr<AdamOptimizer> amsgrad = *AdamOptimizer::Create(with_max);
  std::unique_ptr<torch::optim::Optimizer> resumed = Built(*amsgrad, model);
  absl::Status status = amsgrad->RestoreState(model.parameters(), *resumed, saved);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("weight/max_exp_avg_sq: missing; amsgrad"));
  // The other way round, the maximum is simply not used.
  const OptimizerState with_maximum = [&] {
    std::unique_ptr<torch::optim::Optimizer> o = Built(*amsgrad, model);
    Step(model, *o, 0);
    return *amsgrad->SaveState(model.parameters(), *o);
  }();
  std::unique_ptr<torch::optim::Optimizer> without = Built(*plain, model);
  EXPECT_TRUE(plain->RestoreState(model.parameters(), *without, with_maximum).ok());
}

TEST(BuiltinOptimizersTest, OptionsOutOfRangeAreRefusedNamingTheOption) {
  SgdOptions sgd;
  sgd.set_lr(-1);
  EXPECT_THAT(SgdOptimizer::Create(sgd).status().message(), HasSubstr("lr: must be"));
  sgd.set_lr(0.1);
  sgd.set_nesterov(true);
  EXPECT_THAT(SgdOptimizer::Create(sgd).status().message(),
              HasSubstr("nesterov: needs momentum > 0"));
  AdamOptions adam;
  adam.set_beta2(1.0);
  EXPECT_THAT(AdamOptimizer::Create(adam).status().message(), HasSubstr("beta2: must be in"));
  adam.set_beta2(0.99);
  adam.set_eps(std::nan(""));
  EXPECT_THAT(AdamOptimizer::Create(adam).status().message(), HasSubstr("eps: must be"));
  AdamWOptions adamw;
  adamw.set_weight_decay(-0.1);
  EXPECT_THAT(AdamOptimizer::Create(adamw).status().message(),
              HasSubstr("weight_decay: must be"));
}

}  // namespace
}  // namespace receipt_parity
