#include "study/planted_mistakes.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/atomic_file.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string FreshDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / "planted_mistakes_test" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// A stand-in for //trainer:train: appends its arguments to ARGS beside it,
// writes parity.json into --out unless told not to, and exits with `exit`,
// or 0 for the run whose --out ends with `passes` (a missed mistake).
std::string FakeTrain(const std::string& dir, int exit, const std::string& passes = "",
                      bool writes_parity = true) {
  const std::string path = dir + "/train";
  std::ostringstream body;
  body << "#!/bin/sh\n"
       << "for a in \"$@\"; do case \"$a\" in --out=*) out=\"${a#--out=}\";; esac; done\n"
       << "echo \"$@\" >> " << dir << "/ARGS\n"
       << "mkdir -p \"$out\"\n";
  if (writes_parity) body << "echo '{}' > \"$out/parity.json\"\n";
  if (!passes.empty()) body << "case \"$out\" in *" << passes << ") exit 0;; esac\n";
  body << "exit " << exit << "\n";
  EXPECT_TRUE(WriteFileAtomically(path, body.str()).ok());
  fs::permissions(path, fs::perms::owner_all);
  return path;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(PlantedRunsTest, FiveMistakesEachInThreeSettings) {
  std::set<std::string> mistakes;
  std::set<std::string> dirs;
  for (const PlantedRun& run : PlantedRuns()) {
    mistakes.insert(run.mistake);
    dirs.insert(PlantedRunDir(run));
  }
  EXPECT_EQ(mistakes.size(), 5u);
  EXPECT_EQ(dirs.size(), 15u);
  EXPECT_EQ(PlantedConfigs("/p").size(), 5u);
}

TEST(PlantedRunsTest, EveryConfigIsInPluginsPlanted) {
  const fs::path planted = fs::path(std::getenv("TEST_SRCDIR")) /
                           std::getenv("TEST_WORKSPACE") / "plugins" / "planted";
  for (const std::string& config : PlantedConfigs(planted.string())) {
    EXPECT_TRUE(fs::is_regular_file(config)) << config;
  }
  EXPECT_TRUE(fs::is_regular_file(planted / "libplanted_mistakes.so"));
}

TEST(TrainPlantedMistakesTest, TrainsEveryRunWithItsSettingsOverrides) {
  const std::string dir = FreshDir("all_caught");
  const std::string train = FakeTrain(dir, 3);
  ASSERT_TRUE(TrainPlantedMistakes(train, "/planted", dir + "/out", dir + "/log").ok());
  const std::string args = Read(dir + "/ARGS");
  EXPECT_THAT(args, HasSubstr("--config=/planted/per_rank_clipping.pbtxt --out=" + dir +
                              "/out/per_rank_clipping/bf16 --set=precision=bf16\n"));
  EXPECT_THAT(args, HasSubstr("--out=" + dir +
                              "/out/rank_local_bias/sync_batch_norm --set=model.batch_norm=sync"));
  EXPECT_THAT(args, HasSubstr("functional_dropout/sync_batch_norm --set=model={ name: "
                              "\"python_module\""));
  EXPECT_THAT(args, HasSubstr("--config=/planted/drifting_rate.pbtxt --out=" + dir +
                              "/out/drifting_rate/fp32\n"));
  for (const PlantedRun& run : PlantedRuns()) {
    EXPECT_TRUE(fs::is_regular_file(dir + "/out/" + PlantedRunDir(run) + "/parity.json"));
  }
}

TEST(TrainPlantedMistakesTest, AMistakeThatPassesFailsNamingIt) {
  const std::string dir = FreshDir("missed");
  const std::string train = FakeTrain(dir, 3, "rank_local_bias/bf16");
  const absl::Status status = TrainPlantedMistakes(train, "/planted", dir + "/out", dir + "/log");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              HasSubstr("planted mistake 'a bias updated with the rank-local gradient' in bf16 "
                        "(rank_local_bias.pbtxt --set 'precision=bf16') passed: no verdict "
                        "caught it; see " + dir + "/out/rank_local_bias/bf16/parity.json"));
}

TEST(TrainPlantedMistakesTest, AnotherExitFailsWithTheLog) {
  const std::string dir = FreshDir("crashed");
  const std::string train = FakeTrain(dir, 1);
  const absl::Status status = TrainPlantedMistakes(train, "/planted", dir + "/out", dir + "/log");
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(status.message(), HasSubstr("exited with status 1, not with status 3"));
  EXPECT_THAT(status.message(), HasSubstr("last lines of " + dir + "/log"));
}

TEST(TrainPlantedMistakesTest, AFailureWithoutParityJsonIsNamed) {
  const std::string dir = FreshDir("no_parity");
  const std::string train = FakeTrain(dir, 3, "", /*writes_parity=*/false);
  const absl::Status status = TrainPlantedMistakes(train, "/planted", dir + "/out", dir + "/log");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("exited 3 without writing"));
}

ParityReport Passing() {
  ParityReport parity;
  parity.set_pass(true);
  parity.set_ranks_agree(true);
  parity.add_gradients()->set_pass(true);
  parity.add_parameters_after_step()->set_pass(true);
  parity.mutable_every_update()->set_updates(5);
  parity.mutable_every_update()->set_pass(true);
  parity.mutable_replay()->set_replayed_updates(2);
  parity.mutable_replay()->set_pass(true);
  parity.mutable_whole_run()->add_updates();
  parity.mutable_whole_run()->set_pass(true);
  return parity;
}

TEST(VerdictsThatCaughtTest, NoneForAPassingReport) {
  EXPECT_THAT(VerdictsThatCaught(Passing()), IsEmpty());
}

TEST(VerdictsThatCaughtTest, EachFailingVerdictInJudgingOrder) {
  ParityReport parity = Passing();
  parity.mutable_parameters_after_step(0)->set_pass(false);
  parity.mutable_every_update()->set_pass(false);
  parity.mutable_every_update()->mutable_first_failure()->set_check("reduction");
  parity.mutable_replay()->set_pass(false);
  parity.mutable_whole_run()->set_pass(false);
  EXPECT_THAT(VerdictsThatCaught(parity),
              ElementsAre("first update", "every update (reduction)", "replay", "whole run"));
}

TEST(VerdictsThatCaughtTest, RanksThatDisagreeFailTheFirstUpdate) {
  ParityReport parity = Passing();
  parity.set_ranks_agree(false);
  EXPECT_THAT(VerdictsThatCaught(parity), ElementsAre("first update"));
}

TEST(VerdictsThatCaughtTest, VerdictsThatJudgedNothingCatchNothing) {
  ParityReport parity = Passing();
  parity.mutable_every_update()->set_updates(0);
  parity.mutable_every_update()->set_pass(false);
  parity.mutable_replay()->set_replayed_updates(0);
  parity.mutable_replay()->set_pass(false);
  parity.mutable_whole_run()->clear_updates();
  parity.mutable_whole_run()->set_pass(false);
  EXPECT_THAT(VerdictsThatCaught(parity), IsEmpty());
}

}  // namespace
}  // namespace receipt_parity
