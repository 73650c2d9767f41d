#include "artifacts/run_folder.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/json_file.h"
#include "config/config_loader.h"
#include "artifacts/run_manifest.pb.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/run_folder_" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void Touch(const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << "{}";
}

TrainingConfig Config(int world_size = 2) {
  TrainingConfig config;
  config.set_world_size(world_size);
  config.set_global_batch(32);
  config.set_epochs(3);
  config.mutable_seeds()->set_model_init(37);
  config.mutable_data()->set_image_size(32);
  return config;
}

// A folder holding attempt `attempt` of `config`, unfinished.
void StartedRun(const std::string& dir, const TrainingConfig& config, int attempt) {
  RunFolderDecision decision;
  decision.attempt = attempt;
  ASSERT_TRUE(BeginAttempt(dir, config, decision).ok());
  Touch(dir + "/first_step.json");
}

void Finish(const std::string& dir, const TrainingConfig& config, int updates,
            const std::string& stopped_by) {
  FinishRecord finish;
  finish.set_updates(updates);
  finish.set_stopped_by(stopped_by);
  ASSERT_TRUE(
      WriteFinishRecord(dir, MakeArtifactStamp(ConfigFingerprint(config), 1), finish).ok());
}

TEST(RunFolderTest, AnEmptyOrMissingFolderIsAFreshFirstAttempt) {
  for (const std::string& dir : {FreshDir("empty"), std::string("/nonexistent/run")}) {
    absl::StatusOr<RunFolderDecision> decision = DecideRunFolder(dir, Config());
    ASSERT_TRUE(decision.ok()) << decision.status();
    EXPECT_FALSE(decision->finished);
    EXPECT_EQ(decision->start, AttemptStart::kFresh);
    EXPECT_EQ(decision->attempt, 1);
  }
}

TEST(RunFolderTest, BeginAttemptRecordsTheConfigAndEveryAttempt) {
  const std::string dir = FreshDir("begin");
  StartedRun(dir, Config(), 1);
  absl::StatusOr<RunFolderDecision> second = DecideRunFolder(dir, Config());
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE(BeginAttempt(dir, Config(), *second).ok());
  RunFolderState state;
  ASSERT_TRUE(ReadJsonFile(dir + "/run_state.json", &state).ok());
  EXPECT_EQ(state.config_fingerprint(), ConfigFingerprint(Config()));
  EXPECT_EQ(state.config().world_size(), 2);
  EXPECT_EQ(state.attempt(), 2);
  ASSERT_EQ(state.attempts_size(), 2);
  EXPECT_EQ(state.attempts(0).start(), "fresh");
  EXPECT_EQ(state.attempts(1).start(), "resume");
  EXPECT_EQ(state.attempts(1).pid(), static_cast<int>(getpid()));
  EXPECT_FALSE(state.attempts(1).started_at().empty());
}

TEST(RunFolderTest, AnAttemptThatWroteNothingLeavesAFreshFolder) {
  const std::string dir = FreshDir("nothing_written");
  RunFolderDecision first;
  ASSERT_TRUE(BeginAttempt(dir, Config(), first).ok());
  absl::StatusOr<RunFolderDecision> same = DecideRunFolder(dir, Config());
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->start, AttemptStart::kFresh);
  EXPECT_EQ(same->attempt, 2);
  // A fixed config is not "another config" while nothing was written.
  absl::StatusOr<RunFolderDecision> other = DecideRunFolder(dir, Config(3));
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->attempt, 1);
}

TEST(RunFolderTest, AnUnfinishedRunOfTheSameConfigResumesAsTheNextAttempt) {
  const std::string dir = FreshDir("unfinished");
  StartedRun(dir, Config(), 4);
  TrainingConfig operational = Config();
  operational.mutable_run()->set_log_every_updates(99);  // not fingerprinted
  absl::StatusOr<RunFolderDecision> decision = DecideRunFolder(dir, operational);
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_FALSE(decision->finished);
  EXPECT_EQ(decision->start, AttemptStart::kResume);
  EXPECT_EQ(decision->attempt, 5);
  EXPECT_THAT(decision->description, HasSubstr("RESUMING"));
}

TEST(RunFolderTest, AFinishedRunTrainsNothingUnlessMoreUpdatesAreAsked) {
  const std::string dir = FreshDir("finished");
  StartedRun(dir, Config(), 1);
  Finish(dir, Config(), 5, "max_updates");
  for (int asked : {1, 5}) {
    TrainingConfig config = Config();
    config.mutable_run()->set_max_updates(asked);
    absl::StatusOr<RunFolderDecision> decision = DecideRunFolder(dir, config);
    ASSERT_TRUE(decision.ok()) << decision.status();
    EXPECT_TRUE(decision->finished) << asked;
    EXPECT_THAT(decision->description, HasSubstr("finished"));
  }
  for (int asked : {0, 6}) {  // 0: every epoch
    TrainingConfig config = Config();
    config.mutable_run()->set_max_updates(asked);
    absl::StatusOr<RunFolderDecision> decision = DecideRunFolder(dir, config);
    ASSERT_TRUE(decision.ok()) << decision.status();
    EXPECT_FALSE(decision->finished) << asked;
    EXPECT_EQ(decision->start, AttemptStart::kContinue);
    EXPECT_EQ(decision->attempt, 2);
  }
}

TEST(RunFolderTest, ARunThatTrainedEveryEpochIsFinishedWhateverMaxUpdatesSays) {
  const std::string dir = FreshDir("all_epochs");
  StartedRun(dir, Config(), 1);
  Finish(dir, Config(), 12, "epochs");
  TrainingConfig config = Config();
  config.mutable_run()->set_max_updates(1000);
  absl::StatusOr<RunFolderDecision> decision = DecideRunFolder(dir, config);
  ASSERT_TRUE(decision.ok());
  EXPECT_TRUE(decision->finished);
}

TEST(RunFolderTest, AnotherConfigIsRefusedNamingWhatDiffers) {
  const std::string dir = FreshDir("another");
  StartedRun(dir, Config(2), 1);
  TrainingConfig other = Config(3);
  other.set_epochs(7);
  absl::StatusOr<RunFolderDecision> decision = DecideRunFolder(dir, other);
  ASSERT_FALSE(decision.ok());
  EXPECT_EQ(decision.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(decision.status().message(), HasSubstr(dir + " holds a run of another config"));
  EXPECT_THAT(decision.status().message(), HasSubstr("run_state.json"));
  EXPECT_THAT(decision.status().message(), HasSubstr("world_size: 2 -> 3"));
  EXPECT_THAT(decision.status().message(), HasSubstr("epochs: 3 -> 7"));
  EXPECT_THAT(decision.status().message(), HasSubstr("--overwrite"));
  EXPECT_THAT(decision.status().message(),
              HasSubstr("was written by 2 ranks; this run has 3, and the run's plugins were "
                        "not consulted: set checkpoint { allow_world_size_change: true }"));
}

TEST(RunFolderTest, AWorldSizeIndependentRunGoesOnWithAnotherNumberOfWorkers) {
  const std::string dir = FreshDir("world_free");
  StartedRun(dir, Config(2), 1);
  RunFolderRules dependent;
  dependent.world_size_dependence = "sampler.name \"masked_tail\" deals its order by the world size";
  absl::StatusOr<RunFolderDecision> refused = DecideRunFolder(dir, Config(3), dependent);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("this run has 3, and sampler.name "
                                                    "\"masked_tail\" deals its order"));
  EXPECT_THAT(refused.status().message(), HasSubstr("global_batches"));

  RunFolderRules independent;
  independent.world_size_dependence = "";
  // Another split and other micro-batches come with the world size.
  TrainingConfig three = Config(3);
  three.set_accumulation_steps(2);
  absl::StatusOr<RunFolderDecision> decision = DecideRunFolder(dir, three, independent);
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->start, AttemptStart::kResume);
  EXPECT_THAT(decision->description,
              HasSubstr("its last attempt ran on 2 workers, this one on 3"));
  EXPECT_THAT(decision->description, HasSubstr("as if nothing changed"));
  // Micro-batches alone, at the same world size, still name the run.
  TrainingConfig micro = Config(2);
  micro.set_accumulation_steps(2);
  EXPECT_FALSE(DecideRunFolder(dir, micro, independent).ok());

  // Another global batch: the checkpoint's cursor would mean another
  // position, whatever the plugins.
  TrainingConfig bigger = Config(3);
  bigger.set_global_batch(Config(3).global_batch() * 3);
  absl::StatusOr<RunFolderDecision> moved = DecideRunFolder(dir, bigger, independent);
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(moved.status().message(), HasSubstr("global_batch: "));
  EXPECT_THAT(moved.status().message(), HasSubstr("would not mean the same position"));
}

TEST(RunFolderTest, AllowFlagsLetTheirDifferencesResume) {
  const std::string dir = FreshDir("allowed");
  StartedRun(dir, Config(2), 1);
  TrainingConfig wider = Config(3);
  EXPECT_FALSE(DecideRunFolder(dir, wider).ok());
  wider.mutable_checkpoint()->set_allow_world_size_change(true);
  absl::StatusOr<RunFolderDecision> decision = DecideRunFolder(dir, wider);
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->start, AttemptStart::kResume);

  TrainingConfig new_data = Config(2);
  new_data.mutable_data()->set_image_size(48);
  EXPECT_THAT(DecideRunFolder(dir, new_data).status().message(),
              HasSubstr("allow_data_change: true"));
  new_data.mutable_checkpoint()->set_allow_data_change(true);
  EXPECT_TRUE(DecideRunFolder(dir, new_data).ok());
  // An allow flag covers only its own differences.
  TrainingConfig both = Config(3);
  both.mutable_data()->set_image_size(48);
  both.mutable_checkpoint()->set_allow_world_size_change(true);
  EXPECT_FALSE(DecideRunFolder(dir, both).ok());
}

// Config() with SGD at `lr` and a clip, both recipe.
TrainingConfig Recipe(double lr) {
  TrainingConfig config = Config();
  config.mutable_optimizer()->mutable_sgd()->set_learning_rate(lr);
  config.mutable_clip_grad_norm()->set_max_norm(1.0);
  return config;
}

TEST(RunFolderTest, ARecipeChangeIsRefusedNamingTheFieldAndTheFlag) {
  const std::string dir = FreshDir("recipe_refused");
  StartedRun(dir, Recipe(0.1), 1);
  TrainingConfig lower = Recipe(0.01);
  lower.mutable_lr_schedule()->set_name("step");
  absl::Status refused = DecideRunFolder(dir, lower).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("optimizer.sgd.learning_rate: 0.1 -> 0.01"));
  EXPECT_THAT(refused.message(), HasSubstr("lr_schedule"));
  EXPECT_THAT(refused.message(), HasSubstr("pass --allow_recipe_change"));
  // Beyond the recipe, the flag is not offered.
  TrainingConfig more = lower;
  more.set_epochs(9);
  EXPECT_THAT(std::string(DecideRunFolder(dir, more).status().message()),
              ::testing::Not(HasSubstr("--allow_recipe_change")));
}

TEST(RunFolderTest, AllowRecipeChangeContinuesAndRecordsTheChanges) {
  const std::string dir = FreshDir("recipe_allowed");
  StartedRun(dir, Recipe(0.1), 1);
  TrainingConfig lower = Recipe(0.01);
  lower.mutable_clip_grad_norm()->set_max_norm(0.5);
  RunFolderRules rules;
  rules.allow_recipe_change = true;
  absl::StatusOr<RunFolderDecision> decision = DecideRunFolder(dir, lower, rules);
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->start, AttemptStart::kResume);
  EXPECT_EQ(decision->attempt, 2);
  EXPECT_THAT(decision->recipe_changes,
              UnorderedElementsAre(HasSubstr("optimizer.sgd.learning_rate: 0.1 -> 0.01"),
                                   HasSubstr("clip_grad_norm.max_norm: 1 -> 0.5")));
  EXPECT_THAT(decision->description, HasSubstr("--allow_recipe_change: with the new recipe"));
  ASSERT_TRUE(BeginAttempt(dir, lower, *decision).ok());
  RunFolderState state;
  ASSERT_TRUE(ReadJsonFile(dir + "/run_state.json", &state).ok());
  ASSERT_EQ(state.attempts_size(), 2);
  EXPECT_EQ(state.attempts(0).recipe_changes_size(), 0);
  EXPECT_EQ(state.attempts(1).recipe_changes_size(), 2);
  // The folder now holds the new recipe: the same config resumes without
  // the flag, and the old one is the change.
  EXPECT_EQ(state.config_fingerprint(), ConfigFingerprint(lower));
  EXPECT_TRUE(DecideRunFolder(dir, lower).ok());
  EXPECT_FALSE(DecideRunFolder(dir, Recipe(0.1)).ok());
  // The flag covers the recipe only, and not another optimizer.
  TrainingConfig adamw = lower;
  adamw.mutable_optimizer()->mutable_adamw()->set_learning_rate(0.01);
  EXPECT_FALSE(DecideRunFolder(dir, adamw, rules).ok());
  TrainingConfig bigger = lower;
  bigger.set_global_batch(64);
  EXPECT_FALSE(DecideRunFolder(dir, bigger, rules).ok());
  // Both forms of one optimizer are one optimizer.
  TrainingConfig plugin_form = lower;
  plugin_form.mutable_optimizer()->Clear();
  plugin_form.mutable_optimizer()->set_name("sgd");
  EXPECT_TRUE(DecideRunFolder(dir, plugin_form, rules).ok());
}

TEST(RunFolderTest, AFinishedRunWithANewRecipeAndNoMoreUpdatesTrainsNothing) {
  const std::string dir = FreshDir("recipe_finished");
  TrainingConfig config = Recipe(0.1);
  config.mutable_run()->set_max_updates(4);
  StartedRun(dir, config, 1);
  Finish(dir, config, 4, "max_updates");
  TrainingConfig lower = Recipe(0.01);
  lower.mutable_run()->set_max_updates(4);
  RunFolderRules rules;
  rules.allow_recipe_change = true;
  absl::StatusOr<RunFolderDecision> same_length = DecideRunFolder(dir, lower, rules);
  ASSERT_TRUE(same_length.ok()) << same_length.status();
  EXPECT_TRUE(same_length->finished);
  EXPECT_THAT(same_length->description, HasSubstr("nothing trains with the new recipe"));
  lower.mutable_run()->set_max_updates(8);
  absl::StatusOr<RunFolderDecision> longer = DecideRunFolder(dir, lower, rules);
  ASSERT_TRUE(longer.ok()) << longer.status();
  EXPECT_EQ(longer->start, AttemptStart::kContinue);
  EXPECT_EQ(longer->recipe_changes.size(), 1u);
}

TEST(RunFolderTest, AFolderFromBeforeRunStateIsJudgedByItsManifest) {
  const std::string dir = FreshDir("legacy");
  RunManifest manifest;
  ASSERT_TRUE(WriteArtifact(dir + "/run_manifest.json",
                            MakeArtifactStamp(ConfigFingerprint(Config(2)), 1), manifest)
                  .ok());
  absl::StatusOr<RunFolderDecision> same = DecideRunFolder(dir, Config(2));
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->start, AttemptStart::kResume);
  absl::StatusOr<RunFolderDecision> other = DecideRunFolder(dir, Config(3));
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(other.status().message(), HasSubstr("run_manifest.json"));
}

TEST(RunFolderTest, UnreadableStateOrFinishRecordIsNamed) {
  const std::string dir = FreshDir("unreadable");
  std::ofstream(dir + "/run_state.json") << "{ not json";
  absl::StatusOr<RunFolderDecision> decision = DecideRunFolder(dir, Config());
  ASSERT_FALSE(decision.ok());
  EXPECT_THAT(decision.status().message(), HasSubstr(dir + "/run_state.json"));

  const std::string dir2 = FreshDir("unreadable_finish");
  StartedRun(dir2, Config(), 1);
  std::ofstream(dir2 + "/finished.json") << "[]";
  decision = DecideRunFolder(dir2, Config());
  ASSERT_FALSE(decision.ok());
  EXPECT_THAT(decision.status().message(), HasSubstr(dir2 + "/finished.json"));
}

TEST(RunFolderTest, RemoveRunRemovesOnlyWhatRunsWrite) {
  const std::string dir = FreshDir("overwrite");
  StartedRun(dir, Config(), 1);
  for (const char* name : {"LOCK", "notes.txt", "run_summary.json", "update-3.json",
                           "membership.json",
                           "checkpoints/gen-000001/MANIFEST", "corrupt-gen-000002/x",
                           "reference/first_step.json", "update-x.json"}) {
    Touch(dir + "/" + name);
  }
  absl::StatusOr<std::vector<std::string>> removed = RemoveRun(dir, true);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_THAT(*removed, UnorderedElementsAre("checkpoints", "corrupt-gen-000002",
                                             "first_step.json", "run_state.json",
                                             "run_summary.json", "update-3.json",
                                             "membership.json"));
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename());
  EXPECT_THAT(left, UnorderedElementsAre("LOCK", "notes.txt", "reference", "update-x.json"));
  ASSERT_TRUE(RemoveRun(dir, false).ok());
  EXPECT_FALSE(fs::exists(dir + "/reference"));
  EXPECT_TRUE(fs::exists(dir + "/LOCK"));
}

// Issue 26: --overwrite and stale-artifact clean-up never follow a link:
// they remove the link, and what it points to outside the run folder stays.
TEST(RunFolderTest, OverwriteAndCleanUpRemoveLinksNeverTheirTargets) {
  const std::string dir = FreshDir("links");
  const std::string elsewhere = FreshDir("links_elsewhere");
  StartedRun(dir, Config(), 1);
  Touch(elsewhere + "/checkpoints/gen-000001/MANIFEST");
  Touch(elsewhere + "/reference/first_step.json");
  Touch(elsewhere + "/parity.json");
  Touch(elsewhere + "/run_summary.json");
  fs::create_directory_symlink(elsewhere + "/checkpoints", dir + "/checkpoints");
  fs::create_directory_symlink(elsewhere + "/reference", dir + "/reference");
  fs::create_symlink(elsewhere + "/parity.json", dir + "/parity.json");
  fs::create_symlink(elsewhere + "/run_summary.json", dir + "/run_summary.json");

  ASSERT_TRUE(RemoveStaleArtifacts(dir, /*resumed=*/true).ok());
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir + "/parity.json")));
  ASSERT_TRUE(RemoveRun(dir, /*keep_reference=*/false).ok());
  for (const char* name : {"checkpoints", "reference", "run_summary.json"}) {
    EXPECT_FALSE(fs::exists(fs::symlink_status(dir + "/" + name))) << name;
  }
  for (const char* name : {"checkpoints/gen-000001/MANIFEST", "reference/first_step.json",
                           "parity.json", "run_summary.json"}) {
    EXPECT_TRUE(fs::is_regular_file(elsewhere + "/" + name)) << name;
  }
}

TEST(RunFolderTest, StaleArtifactsGoAFreshStartRemovesAllAResumeKeepsFirstStep) {
  const std::string dir = FreshDir("stale");
  const std::vector<std::string> written = {
      "first_step.json", "update-4.json", "parity.json", "run_summary.json",
      "validation.json", "world_size_change.json", "finished.json", "run_state.json",
      "membership.json"};
  for (const std::string& name : written) Touch(dir + "/" + name);
  // The curves: a resumed run appends its event file to them.
  fs::create_directories(dir + "/tensorboard");
  Touch(dir + "/tensorboard/events.out.tfevents.1");
  absl::StatusOr<std::vector<std::string>> removed = RemoveStaleArtifacts(dir, true);
  ASSERT_TRUE(removed.ok());
  EXPECT_THAT(*removed, UnorderedElementsAre("parity.json", "run_summary.json",
                                             "validation.json", "world_size_change.json",
                                             "finished.json"));
  EXPECT_TRUE(fs::exists(dir + "/first_step.json"));
  EXPECT_TRUE(fs::exists(dir + "/update-4.json"));
  EXPECT_TRUE(fs::exists(dir + "/tensorboard/events.out.tfevents.1"));
  removed = RemoveStaleArtifacts(dir, false);
  ASSERT_TRUE(removed.ok());
  EXPECT_THAT(*removed,
              UnorderedElementsAre("first_step.json", "update-4.json", "tensorboard"));
  EXPECT_FALSE(fs::exists(dir + "/tensorboard"));
  EXPECT_TRUE(fs::exists(dir + "/run_state.json"));
  // The run's membership history spans its attempts.
  EXPECT_TRUE(fs::exists(dir + "/membership.json"));
}

TEST(RunFolderTest, TheFinishRecordListsTheArtifacts) {
  const std::string dir = FreshDir("finish_record");
  for (const char* name : {"run_summary.json", "validation.json", "update-0.json", "LOCK"}) {
    Touch(dir + "/" + name);
  }
  fs::create_directories(dir + "/tensorboard");
  FinishRecord record;
  record.set_updates(9);
  ASSERT_TRUE(WriteFinishRecord(dir, MakeArtifactStamp("f", 3), record).ok());
  FinishRecord read;
  ArtifactStamp stamp;
  ASSERT_TRUE(ReadArtifact(dir + "/finished.json", &read, &stamp).ok());
  EXPECT_EQ(stamp.attempt(), 3);
  EXPECT_EQ(read.updates(), 9);
  EXPECT_THAT(read.artifacts(),
              ElementsAre("run_summary.json", "tensorboard", "update-0.json", "validation.json"));
  EXPECT_FALSE(read.finished_at().empty());
}

}  // namespace
}  // namespace receipt_parity
