#include "checkpointing/run_checkpoints.h"

#include <functional>
#include <memory>
#include <string>

#include <filesystem>

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "checkpoint/generation_layout.h"
#include "checkpoint/manifest_file.h"
#include "checkpoint/recovery.h"
#include "checkpoint/save_generation.h"
#include "checkpoint/shard_state.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "config/config_loader.h"
#include "model/training_test_support.h"
#include "io/atomic_file.h"
#include "optimizers/builtin_optimizers.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

// The run's optimizer plugin: SGD with momentum, or AdamW.
const OptimizerPlugin& Plugin(bool adamw) {
  static const OptimizerPlugin* const sgd = [] {
    SgdOptions options;
    options.set_lr(0.1);
    options.set_momentum(0.9);
    return SgdOptimizer::Create(options)->release();
  }();
  static const OptimizerPlugin* const adam_w = [] {
    AdamWOptions options;
    options.set_lr(0.01);
    return AdamOptimizer::Create(options)->release();
  }();
  return adamw ? *adam_w : *sgd;
}

// A tiny model after one optimizer step (so the optimizer has state).
struct Trained {
  explicit Trained(bool adamw, uint64_t seed = 7) : model(MakeTinyModel(seed)) {
    optimizer = *Plugin(adamw).Build(NamedParametersOf(*model));
    for (auto& p : model->parameters()) p.mutable_grad() = at::ones_like(p);
    optimizer->step();
  }
  std::shared_ptr<Classifier> model;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
};

TrainingConfig Config(int global_batch = 4) {
  TrainingConfig config;
  config.set_global_batch(global_batch);
  config.mutable_checkpoint()->set_every_updates(1);
  config.mutable_checkpoint()->set_keep_last(3);
  return config;
}

RunCheckpointContext Context(const std::string& root, const TrainingConfig* config,
                             bool adamw = false) {
  RunCheckpointContext context;
  context.optimizer = &Plugin(adamw);
  context.plan = {root, config->checkpoint().every_updates(), config->checkpoint().keep_last()};
  context.config = config;
  context.model_revision = "tiny@1";
  return context;
}

TEST(RunCheckpointsTest, ResumeRestoresParametersOptimizerGeneratorAndCursor) {
  const std::string root = FreshTestFolder("ckpt_round_trip");
  const TrainingConfig config = Config();
  const RunCheckpointContext context = Context(root, &config);
  Trained saved(/*adamw=*/false);
  absl::StatusOr<SaveResult> result =
      SaveCheckpoint(context, 1, *saved.model, *saved.optimizer, {3, 0, 3});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->generation, 1);
  EXPECT_GT(result->bytes, 0);
  const at::Tensor next_draw = at::rand({4});  // the generator as saved, drawn once

  Trained resumed(/*adamw=*/false, /*seed=*/99);
  TrainingCursor cursor;
  absl::StatusOr<ResumeRecord> record =
      ResumeFromCheckpoint(context, *resumed.model, *resumed.optimizer, &cursor);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->generation(), 1);
  EXPECT_EQ(record->next_generation(), 2);
  EXPECT_EQ(record->verified_shards_size(), 1);
  EXPECT_EQ(cursor.total_updates, 3);
  EXPECT_EQ(cursor.epoch, 0);
  EXPECT_EQ(cursor.update_in_epoch, 3);
  EXPECT_EQ(ParameterHash(*resumed.model), ParameterHash(*saved.model));
  EXPECT_TRUE(at::equal(at::rand({4}), next_draw));
  auto saved_state = Plugin(false).SaveState(NamedParametersOf(*saved.model), *saved.optimizer);
  auto resumed_state =
      Plugin(false).SaveState(NamedParametersOf(*resumed.model), *resumed.optimizer);
  ASSERT_TRUE(saved_state.ok() && resumed_state.ok());
  ASSERT_EQ(saved_state->size(), 2u);  // a momentum buffer per parameter
  for (const auto& [name, tensor] : *saved_state) {
    ASSERT_EQ(resumed_state->count(name), 1u) << name;
    EXPECT_TRUE(at::equal(resumed_state->at(name), tensor)) << name;
  }
}

TEST(RunCheckpointsTest, GenerationOfAnotherConfigIsRefused) {
  const std::string root = FreshTestFolder("ckpt_other_config");
  const TrainingConfig config = Config(4);
  Trained saved(/*adamw=*/false);
  ASSERT_TRUE(SaveCheckpoint(Context(root, &config), 1, *saved.model,
                             *saved.optimizer, {1, 0, 1})
                  .ok());
  const TrainingConfig other = Config(8);
  TrainingCursor cursor;
  absl::StatusOr<ResumeRecord> record = ResumeFromCheckpoint(
      Context(root, &other), *saved.model, *saved.optimizer, &cursor);
  EXPECT_EQ(record.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(record.status().message()), HasSubstr("another config"));
  EXPECT_EQ(cursor.total_updates, 0);
}

// train --allow_recipe_change: a generation written with a higher learning
// rate and no clipping resumes with a lower one and a clip, only when
// allowed, and never across another optimizer or a non-recipe field.
TEST(RunCheckpointsTest, GenerationOfAnotherRecipeResumesOnlyWhenAllowed) {
  const std::string root = FreshTestFolder("ckpt_other_recipe");
  TrainingConfig config = Config();
  config.mutable_optimizer()->mutable_sgd()->set_learning_rate(0.1);
  Trained saved(/*adamw=*/false);
  ASSERT_TRUE(
      SaveCheckpoint(Context(root, &config), 1, *saved.model, *saved.optimizer, {2, 0, 2}).ok());

  TrainingConfig lower = config;
  lower.mutable_optimizer()->mutable_sgd()->set_learning_rate(0.01);
  lower.mutable_clip_grad_norm()->set_max_norm(1.0);
  RunCheckpointContext resuming = Context(root, &lower);
  Trained resumed(/*adamw=*/false, /*seed=*/99);
  TrainingCursor cursor;
  absl::StatusOr<ResumeRecord> refused =
      ResumeFromCheckpoint(resuming, *resumed.model, *resumed.optimizer, &cursor);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("another config: fingerprint"));
  EXPECT_EQ(cursor.total_updates, 0);

  resuming.allow_recipe_change = true;
  absl::StatusOr<ResumeRecord> allowed =
      ResumeFromCheckpoint(resuming, *resumed.model, *resumed.optimizer, &cursor);
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_EQ(cursor.total_updates, 2);
  EXPECT_EQ(ParameterHash(*resumed.model), ParameterHash(*saved.model));

  TrainingConfig larger = lower;
  larger.set_global_batch(8);
  RunCheckpointContext beyond = Context(root, &larger);
  beyond.allow_recipe_change = true;
  EXPECT_THAT(std::string(ResumeFromCheckpoint(beyond, *resumed.model, *resumed.optimizer,
                                               &cursor)
                              .status()
                              .message()),
              HasSubstr("another config (beyond the recipe)"));
  TrainingConfig adamw = lower;
  adamw.mutable_optimizer()->mutable_adamw()->set_learning_rate(0.01);
  RunCheckpointContext other_optimizer = Context(root, &adamw, /*adamw=*/true);
  other_optimizer.allow_recipe_change = true;
  EXPECT_EQ(ResumeFromCheckpoint(other_optimizer, *resumed.model, *resumed.optimizer, &cursor)
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

// A MANIFEST from before recipe fingerprints cannot say whether only the
// recipe changed: refused, saying so.
TEST(RunCheckpointsTest, AnOlderManifestCannotProveARecipeChange) {
  const std::string root = FreshTestFolder("ckpt_old_manifest");
  TrainingConfig config = Config();
  Trained saved(/*adamw=*/false);
  ASSERT_TRUE(
      SaveCheckpoint(Context(root, &config), 1, *saved.model, *saved.optimizer, {1, 0, 1}).ok());
  const std::string gen = GenerationPath(root, 1);
  absl::StatusOr<CheckpointManifest> manifest = ReadManifest(gen, 1);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  manifest->clear_recipe_independent_fingerprint();
  manifest->clear_world_and_recipe_independent_fingerprint();
  ASSERT_TRUE(WriteManifest(gen, *manifest).ok());

  TrainingConfig clipped = config;
  clipped.mutable_clip_grad_norm()->set_max_norm(1.0);
  RunCheckpointContext resuming = Context(root, &clipped);
  resuming.allow_recipe_change = true;
  TrainingCursor cursor;
  absl::Status refused =
      ResumeFromCheckpoint(resuming, *saved.model, *saved.optimizer, &cursor).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("before recipe fingerprints were recorded"));
  // The same config still resumes from it.
  RunCheckpointContext same = Context(root, &config);
  same.allow_recipe_change = true;
  EXPECT_TRUE(ResumeFromCheckpoint(same, *saved.model, *saved.optimizer, &cursor).ok());
}

TEST(RunCheckpointsTest, GenerationSavedOnOtherDataIsRefusedUnlessAllowed) {
  const std::string root = FreshTestFolder("ckpt_other_data");
  TrainingConfig config = Config();
  RunCheckpointContext saving = Context(root, &config);
  saving.data_hash = "aaaa";
  Trained saved(/*adamw=*/false);
  ASSERT_TRUE(SaveCheckpoint(saving, 1, *saved.model, *saved.optimizer, {1, 0, 1}).ok());

  RunCheckpointContext resuming = Context(root, &config);
  resuming.data_hash = "bbbb";
  TrainingCursor cursor;
  absl::StatusOr<ResumeRecord> refused =
      ResumeFromCheckpoint(resuming, *saved.model, *saved.optimizer, &cursor);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("other receipts: data hash aaaa != bbbb"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("allow_data_change"));
  EXPECT_EQ(cursor.total_updates, 0);

  config.mutable_checkpoint()->set_allow_data_change(true);
  absl::StatusOr<ResumeRecord> allowed =
      ResumeFromCheckpoint(resuming, *saved.model, *saved.optimizer, &cursor);
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_TRUE(allowed->data_changed());
  EXPECT_EQ(allowed->saved_data_hash(), "aaaa");
  EXPECT_EQ(allowed->data_hash(), "bbbb");
  EXPECT_EQ(cursor.total_updates, 1);
}

TEST(RunCheckpointsTest, TheSameDataResumesAndSaysSo) {
  const std::string root = FreshTestFolder("ckpt_same_data");
  const TrainingConfig config = Config();
  RunCheckpointContext context = Context(root, &config);
  context.data_hash = "aaaa";
  Trained saved(/*adamw=*/false);
  ASSERT_TRUE(SaveCheckpoint(context, 1, *saved.model, *saved.optimizer, {1, 0, 1}).ok());
  TrainingCursor cursor;
  absl::StatusOr<ResumeRecord> record =
      ResumeFromCheckpoint(context, *saved.model, *saved.optimizer, &cursor);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_FALSE(record->data_changed());
  EXPECT_EQ(record->saved_data_hash(), "aaaa");
}

// Generation 1 saved normally; generation 2 a valid container (the MANIFEST
// verifies every shard's size and checksum) whose shard `garble` changed.
void SaveGarbledSecondGeneration(const RunCheckpointContext& context, Trained& trained,
                                 const std::function<void(ShardState*)>& garble) {
  ASSERT_TRUE(SaveCheckpoint(context, 1, *trained.model, *trained.optimizer, {2, 0, 2}).ok());
  absl::StatusOr<RecoveryDecision> decision = FindRestorable(context.plan.folder);
  ASSERT_TRUE(decision.ok()) << decision.status();
  absl::StatusOr<std::string> bytes = ReadShardBytes(*decision, 0);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<ShardState> shard = DeserializeShardState(*bytes, "gen 1");
  ASSERT_TRUE(shard.ok()) << shard.status();
  garble(&*shard);
  absl::StatusOr<std::string> garbled = SerializeShardState(*shard);
  ASSERT_TRUE(garbled.ok()) << garbled.status();
  SingleRankConfirmations single;
  ASSERT_TRUE(SaveGeneration(context.plan.folder, 2, 0, *garbled, decision->manifest, single).ok());
}

// Resume from the garbled generation: a Status, never an exception, and
// the cursor untouched.
absl::Status ResumeGarbled(const std::string& name, bool adamw,
                           const std::function<void(ShardState*)>& garble) {
  const std::string root = FreshTestFolder(name);
  const TrainingConfig config = Config();
  const RunCheckpointContext context = Context(root, &config, adamw);
  Trained trained(adamw);
  SaveGarbledSecondGeneration(context, trained, garble);
  TrainingCursor cursor;
  absl::StatusOr<ResumeRecord> record;
  EXPECT_NO_THROW(record = ResumeFromCheckpoint(context, *trained.model,
                                                *trained.optimizer, &cursor));
  EXPECT_EQ(cursor.total_updates, 0);
  EXPECT_EQ(cursor.epoch, 0);
  return record.status();
}

TEST(RunCheckpointsTest, GarbageGeneratorStateIsDataLossNotAnException) {
  absl::Status status = ResumeGarbled("ckpt_garbage_rng", false, [](ShardState* shard) {
    shard->rank_tensors["rng"] = at::rand({7});
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("checkpoint generation 2"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("generator state: LibTorch"));
}

TEST(RunCheckpointsTest, EmptyAdamWStepIsDataLossNotAnException) {
  absl::Status status = ResumeGarbled("ckpt_garbage_step", true, [](ShardState* shard) {
    ASSERT_EQ(shard->owned_tensors.count("optimizer/out.weight/step"), 1u);
    shard->owned_tensors["optimizer/out.weight/step"] = at::empty({0}, at::kLong);
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("checkpoint generation 2"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("optimizer state: LibTorch"));
}

TEST(RunCheckpointsTest, MissingCursorIsDataLossNotAnException) {
  absl::Status status = ResumeGarbled("ckpt_no_cursor", false, [](ShardState* shard) {
    shard->scalars.erase("total_updates");
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("'total_updates'"));
}

TEST(RunCheckpointsTest, ParameterOfAnotherShapeIsRefused) {
  absl::Status status = ResumeGarbled("ckpt_wrong_shape", false, [](ShardState* shard) {
    shard->owned_tensors["model/out.bias"] = at::zeros({3});
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("out.bias has another shape"));
}

// A model with state that is not trained: running statistics and a count.
class BufferedModel : public Classifier {
 public:
  BufferedModel(float running, int64_t steps) {
    torch::manual_seed(3);
    fc_ = register_module("fc", torch::nn::Linear(3, 2));
    register_buffer("running", at::full({2}, running));
    register_buffer("steps", at::full({1}, steps, at::kLong));
  }
  at::Tensor forward(const at::Tensor& x) override { return fc_->forward(x); }
  std::string Describe() const override { return "buffered"; }

 private:
  torch::nn::Linear fc_{nullptr};
};

// The tensor names in every shard of generation 1.
std::vector<std::string> SavedNames(const std::string& root) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(root + "/gen-000001")) {
    if (entry.path().filename() == "MANIFEST") continue;
    absl::StatusOr<std::string> bytes = ReadFileToString(entry.path().string());
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    absl::StatusOr<ShardState> shard = DeserializeShardState(*bytes, "shard");
    EXPECT_TRUE(shard.ok()) << shard.status();
    for (const auto& [name, tensor] : shard->owned_tensors) names.push_back(name);
  }
  return names;
}

TEST(RunCheckpointsTest, BuffersAreSavedAndRestoredBesideTheParameters) {
  const std::string root = FreshTestFolder("ckpt_buffers");
  const TrainingConfig config = Config();
  const RunCheckpointContext context = Context(root, &config);
  auto saved = std::make_shared<BufferedModel>(1.5f, 7);
  torch::optim::SGD saved_optimizer(saved->parameters(), torch::optim::SGDOptions(0.1));
  ASSERT_TRUE(SaveCheckpoint(context, 1, *saved, saved_optimizer, {1, 0, 1}).ok());
  EXPECT_THAT(SavedNames(root), ::testing::IsSupersetOf({"model_buffer/running",
                                                         "model_buffer/steps",
                                                         "model/fc.weight"}));

  auto resumed = std::make_shared<BufferedModel>(0.0f, 0);
  torch::optim::SGD resumed_optimizer(resumed->parameters(), torch::optim::SGDOptions(0.1));
  TrainingCursor cursor;
  absl::StatusOr<ResumeRecord> record =
      ResumeFromCheckpoint(context, *resumed, resumed_optimizer, &cursor);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_TRUE(at::equal(resumed->named_buffers()["running"], at::full({2}, 1.5f)));
  EXPECT_EQ(resumed->named_buffers()["steps"].item<int64_t>(), 7);
  EXPECT_EQ(resumed->named_buffers()["steps"].scalar_type(), at::kLong);
}

TEST(RunCheckpointsTest, AModelWithoutBuffersSavesWhatItSavedBefore) {
  const std::string root = FreshTestFolder("ckpt_no_buffers");
  const TrainingConfig config = Config();
  Trained saved(/*adamw=*/false);
  ASSERT_TRUE(
      SaveCheckpoint(Context(root, &config), 1, *saved.model, *saved.optimizer, {1, 0, 1})
          .ok());
  for (const std::string& name : SavedNames(root)) {
    EXPECT_EQ(name.rfind("model_buffer/", 0), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace receipt_parity
