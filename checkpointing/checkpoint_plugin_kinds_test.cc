// Checkpoint MANIFESTs name each plugin by its kind's registry name
// (config/plugin_kinds.h), the vocabulary the hand-written list before the
// table used; a generation whose MANIFEST spells the kinds as older writers
// did still resumes.
#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/optim/optimizer.h>

#include "checkpoint/generation_layout.h"
#include "checkpoint/manifest_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/classifier.h"
#include "config/config_loader.h"
#include "checkpointing/run_checkpoints.h"
#include "artifacts/resume_record.pb.h"

namespace receipt_parity {
namespace {

using Kinds = std::vector<std::pair<std::string, std::string>>;

LoadedConfig SmallRun() {
  TrainingConfig config;
  config.set_global_batch(2);
  config.mutable_model()->set_architecture("linear");
  config.mutable_optimizer()->mutable_sgd()->set_learning_rate(0.1);
  config.mutable_data()->mutable_synthetic()->set_num_identities(8);
  config.mutable_data()->set_image_size(8);
  config.mutable_checkpoint()->set_every_updates(1);
  config.mutable_sampler()->set_name("duplicate_pad");
  absl::StatusOr<LoadedConfig> loaded = ValidateTrainingConfig(config, "small");
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  return *loaded;
}

struct Trainee {
  std::shared_ptr<Classifier> model;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
};

Trainee Build(const LoadedConfig& loaded) {
  Trainee t;
  t.model = *loaded.model.Build();
  t.optimizer = *loaded.optimizer.plugin->Build(NamedParametersOf(*t.model));
  return t;
}

Kinds PluginsOf(const CheckpointManifest& manifest) {
  Kinds kinds;
  for (const PluginName& p : manifest.plugins()) kinds.emplace_back(p.kind(), p.name());
  return kinds;
}

class CheckpointPluginKindsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = ::testing::TempDir() + "/" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(root_);
    loaded_ = SmallRun();
    context_.plan = {root_, 1, 2};
    context_.config = &loaded_.config;
    context_.optimizer = loaded_.optimizer.plugin.get();
    Trainee saved = Build(loaded_);
    context_.model_revision = ModelRevision(*saved.model);
    ASSERT_TRUE(SaveCheckpoint(context_, 1, *saved.model, *saved.optimizer,
                               TrainingCursor{3, 0, 3})
                    .ok());
    gen_dir_ = root_ + "/" + GenerationFolderName(1);
  }

  std::string root_;
  std::string gen_dir_;
  LoadedConfig loaded_;
  RunCheckpointContext context_;
};

TEST_F(CheckpointPluginKindsTest, TheManifestNamesEveryKindByItsRegistryName) {
  absl::StatusOr<CheckpointManifest> manifest = ReadManifest(gen_dir_, 1);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  // The list run_checkpoints.cc spelled out before the table, and the
  // learning-rate schedule that joined it (a manifest without it resumes:
  // AManifestWithOlderKindNamesStillResumes).
  EXPECT_EQ(PluginsOf(*manifest), (Kinds{{"loss_weighting", "global_count"},
                                         {"lr_schedule", "constant"},
                                         {"metric_dedup", "by_receipt_id"},
                                         {"reducer", "allreduce_sum"},
                                         {"sampler_policy", "duplicate_pad"}}));
}

TEST_F(CheckpointPluginKindsTest, AManifestWithOlderKindNamesStillResumes) {
  // The start agreement's old spelling of the sampler kind, and a writer that
  // listed fewer kinds.
  for (const Kinds& old : {Kinds{{"loss_weighting", "global_count"},
                                 {"metric_dedup", "by_receipt_id"},
                                 {"reducer", "allreduce_sum"},
                                 {"sampler", "duplicate_pad"}},
                           Kinds{{"reducer", "allreduce_sum"}, {"sampler", "duplicate_pad"}}}) {
    absl::StatusOr<CheckpointManifest> manifest = ReadManifest(gen_dir_, 1);
    ASSERT_TRUE(manifest.ok()) << manifest.status();
    manifest->clear_plugins();
    for (const auto& [kind, name] : old) {
      PluginName* p = manifest->add_plugins();
      p->set_kind(kind);
      p->set_name(name);
    }
    ASSERT_TRUE(WriteManifest(gen_dir_, *manifest).ok());

    Trainee fresh = Build(loaded_);
    TrainingCursor cursor;
    absl::StatusOr<ResumeRecord> resumed =
        ResumeFromCheckpoint(context_, *fresh.model, *fresh.optimizer, &cursor);
    ASSERT_TRUE(resumed.ok()) << resumed.status();
    EXPECT_EQ(resumed->generation(), 1);
    EXPECT_EQ(cursor.total_updates, 3);
    EXPECT_EQ(cursor.update_in_epoch, 3);
  }
}

}  // namespace
}  // namespace receipt_parity
