// The update replay (replay/update_replay.h) against real ranks: each test
// trains a few updates on W ranks joined by a real Gloo group
// (collectives/local_process_group.h) through UpdateStep, keeps rank 0's
// state around update K as a run records it, and replays K in one process.
#include "replay/update_replay.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "collectives/local_process_group.h"
#include "model/classifier.h"
#include "model/model_state.h"
#include "optimizers/builtin_optimizers.h"
#include "reducers/allreduce_sum_reducer.h"
#include "reducers/ordered_sum_reducer.h"
#include "reducers/rank_average_reducer.h"
#include "model/training_test_support.h"
#include "trainer/update_step.h"
#include "weighting/global_count_weighting.h"
#include "weighting/update_shares.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

// The tiny set with keys (100 i + 7), so that keyed dropout acts.
TinyTrainingSet KeyedSet(int n) {
  TinyTrainingSet set = MakeTinyTrainingSet(n);
  set.examples.keys = at::arange(n, at::kLong) * 100 + 7;
  set.source = InMemoryExamples(set.examples);
  return set;
}

std::function<std::shared_ptr<Classifier>()> Cnn(const std::string& batch_norm, float dropout) {
  return [batch_norm, dropout] {
    ModelConfig config;
    config.set_architecture("cnn");
    config.add_conv_channels(3);
    config.add_hidden_units(8);
    config.set_dropout(dropout);
    config.set_batch_norm(batch_norm);
    absl::StatusOr<std::shared_ptr<Classifier>> model =
        BuildClassifier(config, {1, kTinyImageSide, kTinyImageSide}, kTinyClasses, 11);
    EXPECT_TRUE(model.ok()) << model.status();
    return *model;
  };
}

// A team's module that drops with the default generator instead of keys.
class UnkeyedDropout : public Classifier {
 public:
  UnkeyedDropout() {
    fc_ = register_module("fc", torch::nn::Linear(kTinyImageSide * kTinyImageSide, kTinyClasses));
  }
  at::Tensor forward(const at::Tensor& images) override {
    return fc_->forward(at::dropout(images.reshape({images.size(0), -1}), 0.5, is_training()));
  }
  std::string Describe() const override { return "unkeyed_dropout"; }

 private:
  torch::nn::Linear fc_{nullptr};
};

std::unique_ptr<OptimizerPlugin> MomentumSgd() {
  SgdOptions options;
  options.set_lr(0.1);
  options.set_momentum(0.9);
  return *SgdOptimizer::Create(options);
}

std::unique_ptr<OptimizerPlugin> AdamW() {
  AdamWOptions options;
  options.set_lr(0.01);
  return *AdamOptimizer::Create(options);
}

struct RunSetup {
  std::vector<int> local_batch;
  int examples = 13;
  int micro_batches = 1;
  bool bf16 = false;
  std::function<std::shared_ptr<Classifier>()> make_model = Cnn("", 0.25f);
  std::function<std::unique_ptr<GradientReducer>()> make_reducer = [] {
    return std::make_unique<AllreduceSumReducer>(*AllreduceSumReducer::Create(1 << 20));
  };
  std::function<std::unique_ptr<OptimizerPlugin>()> make_optimizer = MomentumSgd;
  std::optional<GradientClipping> clipping;
  // The updates 0..replayed run; the last is replayed.
  int64_t replayed = 1;
};

// Rank 0's state around the replayed update, as a run records it.
class StateCapture : public UpdateObserver {
 public:
  StateCapture(int64_t update, Classifier* model, torch::optim::Optimizer* optimizer,
               const OptimizerPlugin* plugin)
      : update_(update), model_(model), optimizer_(optimizer), plugin_(plugin) {}

  absl::Status BeforeOptimizerStep(int64_t total_update, const Classifier&) override {
    if (total_update != update_) return absl::OkStatus();
    for (const auto& [name, tensor] : ModelStateByName(*model_)) {
      state.model_before[name] = tensor.clone();
    }
    absl::StatusOr<OptimizerState> saved =
        plugin_->SaveState(NamedParametersOf(*model_), *optimizer_);
    if (!saved.ok()) return saved.status();
    for (const auto& [name, tensor] : *saved) state.optimizer_before[name] = tensor.clone();
    for (const auto& item : model_->named_parameters()) {
      state.gradient.emplace_back(item.key(), item.value().grad().detach().clone());
    }
    return absl::OkStatus();
  }
  absl::Status AfterOptimizerStep(int64_t total_update, const EpochPlan&, int64_t,
                                  const UpdateResult& result, const Classifier&) override {
    if (total_update != update_) return absl::OkStatus();
    for (const auto& item : model_->named_parameters()) {
      state.parameters_after.emplace_back(item.key(), item.value().detach().clone());
    }
    clip_factor = result.clip_factor;
    return absl::OkStatus();
  }

  RunStateAtUpdate state;
  double clip_factor = 1;

 private:
  int64_t update_;
  Classifier* model_;
  torch::optim::Optimizer* optimizer_;
  const OptimizerPlugin* plugin_;
};

struct Replayed {
  RecordedUpdate recorded;
  RunStateAtUpdate state;
  std::unique_ptr<OptimizerPlugin> optimizer;
  TinyTrainingSet set;
  ReplayTools tools;
};

// Trains `setup` on its ranks and returns what a replay of its last update
// needs.
std::unique_ptr<Replayed> Train(const RunSetup& setup) {
  // One intra-op thread, as a run computes (run.intra_op_threads): a
  // kernel's reduction order follows its thread count, and the replay
  // recomputes in the run's own process, with its setting.
  at::set_num_threads(1);
  auto out = std::make_unique<Replayed>();
  out->set = KeyedSet(setup.examples);
  out->optimizer = setup.make_optimizer();
  const int world = static_cast<int>(setup.local_batch.size());
  const EpochPlan plan = TinyPlan(setup.examples, setup.local_batch);
  EXPECT_LT(setup.replayed, plan.num_updates());
  GlobalCountWeighting weighting;
  std::unique_ptr<StateCapture> capture;
  int chunk_slots = 0;
  int divisor = 1;
  // Made one after another: a model's initialization draws from torch's
  // one generator, which threads making models at once would interleave.
  std::vector<std::shared_ptr<Classifier>> models;
  for (int r = 0; r < world; ++r) models.push_back(setup.make_model());
  const absl::Status ran = RunOnLocalGroup(world, [&](int rank, c10d::ProcessGroup& group) {
    std::shared_ptr<Classifier> model = models[rank];
    std::unique_ptr<torch::optim::Optimizer> optimizer =
        *out->optimizer->Build(NamedParametersOf(*model));
    std::unique_ptr<GradientReducer> reducer = setup.make_reducer();
    UpdateStepParts parts;
    parts.model = model.get();
    parts.optimizer = optimizer.get();
    parts.weighting = &weighting;
    parts.reducer = reducer.get();
    parts.group = world > 1 ? &group : nullptr;
    parts.rank = rank;
    parts.examples = &out->set.source;
    parts.labels = &out->set.labels;
    parts.class_counts = &out->set.class_counts;
    parts.micro_batches = setup.micro_batches;
    parts.bf16 = setup.bf16;
    parts.clipping = setup.clipping;
    if (rank == 0) {
      capture = std::make_unique<StateCapture>(setup.replayed, model.get(), optimizer.get(),
                                               out->optimizer.get());
      chunk_slots = reducer->chunk_slots();
      divisor = reducer->reduced_divisor(world);
    }
    UpdateStep step(parts);
    for (int64_t u = 0; u <= setup.replayed; ++u) {
      absl::StatusOr<UpdateResult> result = step.Run(plan, u, u, rank == 0 ? capture.get() : nullptr);
      if (!result.ok()) return result.status();
    }
    return absl::OkStatus();
  });
  EXPECT_TRUE(ran.ok()) << ran;
  RecordedUpdate& recorded = out->recorded;
  recorded.total_update = setup.replayed;
  recorded.bf16 = setup.bf16;
  const WeightingInputs inputs{&weighting, &out->set.labels, &out->set.class_counts,
                               setup.micro_batches};
  if (chunk_slots > 0) {
    recorded.chunks = OrderedChunks(plan, setup.replayed, chunk_slots, inputs);
    recorded.chunk_rows = ChunkRows(plan, chunk_slots);
  } else {
    recorded.shares = UpdateShares(plan, setup.replayed, inputs);
  }
  recorded.reduced_divisor = divisor;
  recorded.clipping = setup.clipping;
  recorded.run_clip_factor = capture->clip_factor;
  out->state = capture->state;
  out->tools.make_model = [make = setup.make_model]()
      -> absl::StatusOr<std::shared_ptr<Classifier>> { return make(); };
  out->tools.optimizer = out->optimizer.get();
  out->tools.examples = &out->set.source;
  out->tools.generator_seed = 12345;
  return out;
}

UpdateReplay Replay(const Replayed& r) {
  absl::StatusOr<UpdateReplay> replay = ReplayUpdate(r.recorded, r.state, r.tools);
  EXPECT_TRUE(replay.ok()) << replay.status();
  return replay.ok() ? *replay : UpdateReplay();
}

void ExpectBitwise(const UpdateReplay& replay) {
  EXPECT_EQ(replay.mode(), "bitwise");
  EXPECT_TRUE(replay.pass()) << replay.DebugString();
  EXPECT_TRUE(replay.bitwise());
  EXPECT_TRUE(replay.parameters_bitwise());
  EXPECT_EQ(replay.gradient_max_abs_diff(), 0);
  EXPECT_EQ(replay.stepped_from(), "replay");
}

// Two ranks, an epoch's short last update (5 valid slots of 8), two
// micro-batches each, keyed dropout, momentum: the replay is the run's
// update bit for bit.
TEST(UpdateReplayTest, TwoRanksWithAccumulationReplayBitForBit) {
  RunSetup setup;
  setup.local_batch = {4, 4};
  setup.micro_batches = 2;
  const std::unique_ptr<Replayed> run = Train(setup);
  const UpdateReplay replay = Replay(*run);
  ExpectBitwise(replay);
  EXPECT_EQ(replay.ranks(), 2);
  // Where the replay's time went: every phase timed, together within it.
  const ReplayPhaseSeconds& phases = replay.phases();
  EXPECT_GT(phases.models(), 0);
  EXPECT_GT(phases.compute(), 0);
  EXPECT_GT(phases.step(), 0);
  EXPECT_GE(phases.judge_gradient(), 0);
  EXPECT_GE(phases.power(), 0);
  EXPECT_LE(phases.models() + phases.compute() + phases.judge_gradient() + phases.step() +
                phases.power(),
            replay.seconds());
}

// The power's one-pass float path gives what LibTorch's kernels give (the
// double tensors take them), element for element: none moved, NaN, huge.
TEST(SmallestDetectableChangeTest, TheFloatPassEqualsTheKernels) {
  const at::Tensor before = at::randn({1000}, at::kFloat) * 10;
  at::Tensor after = before.clone();
  after.narrow(0, 0, 500).add_(at::randn({500}, at::kFloat) * 1e-3);
  after[600] = 3e38f;
  const std::optional<double> fast = SmallestDetectableChange(after, before);
  const std::optional<double> kernels =
      SmallestDetectableChange(after.to(at::kDouble), before.to(at::kDouble));
  ASSERT_TRUE(fast.has_value());
  ASSERT_TRUE(kernels.has_value());
  EXPECT_EQ(*fast, *kernels);
  EXPECT_GT(*fast, 0);
  EXPECT_FALSE(SmallestDetectableChange(before, before.clone()).has_value());
  after[7] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(*SmallestDetectableChange(after, before)));
  EXPECT_TRUE(std::isnan(
      *SmallestDetectableChange(after.to(at::kDouble), before.to(at::kDouble))));
}

TEST(UpdateReplayTest, Bf16AdamWWithGlobalClippingReplaysBitForBit) {
  RunSetup setup;
  setup.local_batch = {4, 4};
  setup.bf16 = true;
  setup.make_optimizer = AdamW;
  setup.clipping = GradientClipping{0.05, true};
  const std::unique_ptr<Replayed> run = Train(setup);
  ASSERT_LT(run->recorded.run_clip_factor, 1) << "the test must clip";
  ExpectBitwise(Replay(*run));
}

TEST(UpdateReplayTest, SynchronizedBatchNormOnTwoRanksReplaysBitForBit) {
  RunSetup setup;
  setup.local_batch = {4, 4};
  setup.micro_batches = 2;
  setup.make_model = Cnn("sync", 0);
  ExpectBitwise(Replay(*Train(setup)));
}

TEST(UpdateReplayTest, OrderedModeReplaysBitForBit) {
  RunSetup setup;
  setup.local_batch = {4, 4};
  setup.make_reducer = [] {
    return std::make_unique<OrderedSumReducer>(*OrderedSumReducer::Create(2));
  };
  ExpectBitwise(Replay(*Train(setup)));
}

TEST(UpdateReplayTest, RankAverageDividesAsTheReducerDid) {
  RunSetup setup;
  setup.local_batch = {4, 4};
  setup.make_reducer = [] {
    return std::make_unique<RankAverageReducer>(*RankAverageReducer::Create(1 << 20));
  };
  ExpectBitwise(Replay(*Train(setup)));
}

// Three ranks: the run's order of adding is the ring's, so the gradient is
// judged within the bound of two orders, and the step from the run's own
// gradient lands on its parameters bit for bit.
TEST(UpdateReplayTest, ThreeRanksAreJudgedWithinTheBoundOfTheSum) {
  RunSetup setup;
  setup.local_batch = {4, 4, 4};
  setup.examples = 29;
  const std::unique_ptr<Replayed> run = Train(setup);
  const UpdateReplay replay = Replay(*run);
  EXPECT_EQ(replay.mode(), "bound");
  EXPECT_TRUE(replay.pass()) << replay.DebugString();
  EXPECT_LE(replay.largest_share_of_bound(), 1);
  EXPECT_TRUE(replay.parameters_bitwise());
  EXPECT_EQ(replay.stepped_from(), "run");
  EXPECT_EQ(replay.ranks(), 3);

  // Four times the bound at one element fails, naming it.
  Replayed& planted = *run;
  at::Tensor g = planted.state.gradient[0].second;
  const double bound = std::max(replay.gradient_bound(), 1e-6);
  g.reshape(-1)[3] += static_cast<float>(4 * bound + 1e-3);
  const UpdateReplay failed = Replay(planted);
  EXPECT_FALSE(failed.pass());
  EXPECT_EQ(failed.first_difference().tensor(), planted.state.gradient[0].first);
  EXPECT_EQ(failed.first_difference().element(), 3);
  EXPECT_GT(failed.first_difference().bound(), 0);
}

// One bit of one element of what the run stepped with, or of where it
// stepped to, fails the replay, naming the tensor, the element and both
// values.
TEST(UpdateReplayTest, OneFlippedBitFailsNamingTheElement) {
  RunSetup setup;
  setup.local_batch = {4, 4};
  const std::unique_ptr<Replayed> run = Train(setup);
  at::Tensor g = run->state.gradient[1].second.reshape(-1);
  float value = g[2].item<float>();
  int32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  bits ^= 1;
  std::memcpy(&value, &bits, sizeof(bits));
  g[2] = value;
  const UpdateReplay replay = Replay(*run);
  EXPECT_FALSE(replay.pass());
  EXPECT_FALSE(replay.bitwise());
  EXPECT_EQ(replay.first_difference().what(), "gradient");
  EXPECT_EQ(replay.first_difference().tensor(), run->state.gradient[1].first);
  EXPECT_EQ(replay.first_difference().element(), 2);
  EXPECT_EQ(static_cast<float>(replay.first_difference().run()), value);
  ASSERT_GT(replay.failures_size(), 0);
  EXPECT_THAT(replay.failures(0),
              HasSubstr("replay of update 1: the gradient of " + run->state.gradient[1].first +
                        " differs first at element 2"));

  const std::unique_ptr<Replayed> stepped = Train(setup);
  stepped->state.parameters_after[0].second.reshape(-1)[0] += 1e-3f;
  const UpdateReplay moved = Replay(*stepped);
  EXPECT_FALSE(moved.pass());
  EXPECT_TRUE(moved.first_difference().what() == "parameter after the step");
}

// A module that drops with the default generator draws otherwise in the
// replay than in the run: the replay fails where keyed dropout passes.
TEST(UpdateReplayTest, DropoutFromTheDefaultGeneratorFailsTheReplay) {
  RunSetup setup;
  setup.local_batch = {4, 4};
  setup.make_model = [] {
    at::manual_seed(5);
    return std::make_shared<UnkeyedDropout>();
  };
  const UpdateReplay replay = Replay(*Train(setup));
  EXPECT_FALSE(replay.pass());
  EXPECT_EQ(replay.first_difference().what(), "gradient");
}

TEST(UpdateReplayTest, SynchronizedBatchNormOnThreeRanksIsNotReplayedAndSaysWhy) {
  RunSetup setup;
  setup.local_batch = {4, 4, 4};
  setup.examples = 29;
  setup.make_model = Cnn("sync", 0);
  const UpdateReplay replay = Replay(*Train(setup));
  EXPECT_EQ(replay.mode(), "not_replayed");
  EXPECT_THAT(replay.not_replayed(), HasSubstr("synchronized batch norms on 3 ranks"));
  EXPECT_FALSE(replay.pass());

  ReplayVerdict verdict = ReplayVerdictOf({replay});
  EXPECT_FALSE(verdict.pass());
  EXPECT_EQ(verdict.replayed_updates(), 0);
  EXPECT_THAT(verdict.not_replayed(), HasSubstr("each says why"));
}

TEST(UpdateReplayTest, TheVerdictPassesWhenEveryReplayedUpdatePasses) {
  UpdateReplay bitwise;
  bitwise.set_mode("bitwise");
  bitwise.set_bitwise(true);
  bitwise.set_pass(true);
  UpdateReplay skipped;
  skipped.set_mode("not_replayed");
  const ReplayVerdict verdict = ReplayVerdictOf({bitwise, skipped});
  EXPECT_TRUE(verdict.pass());
  EXPECT_EQ(verdict.replayed_updates(), 1);
  EXPECT_EQ(verdict.bitwise_updates(), 1);
  EXPECT_EQ(verdict.updates_size(), 2);
  UpdateReplay failed = bitwise;
  failed.set_pass(false);
  EXPECT_FALSE(ReplayVerdictOf({bitwise, failed}).pass());
  EXPECT_FALSE(ReplayVerdictOf({}).pass());
}

}  // namespace
}  // namespace receipt_parity
