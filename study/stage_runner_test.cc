#include "study/stage_runner.h"

#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/subprocess.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(StageRunnerTest, RunsEveryStageInOrderWithProgressLines) {
  std::vector<std::string> ran;
  std::ostringstream progress;
  absl::Status status = RunStages(
      {{"first", "the first stage",
        [&] { ran.push_back("first"); return absl::OkStatus(); }},
       {"second", "the second stage",
        [&] { ran.push_back("second"); return absl::OkStatus(); }}},
      &progress);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_THAT(ran, ElementsAre("first", "second"));
  EXPECT_THAT(Lines(progress.str()),
              ElementsAre("[1/2] first: the first stage",
                          MatchesRegex("\\[1/2\\] first: done in [0-9.]+ s"),
                          "[2/2] second: the second stage",
                          MatchesRegex("\\[2/2\\] second: done in [0-9.]+ s")));
}

TEST(StageRunnerTest, StopsAtTheFailingStageAndNamesIt) {
  std::vector<std::string> ran;
  std::ostringstream progress;
  absl::Status status = RunStages(
      {{"one_worker", "",
        [&] { ran.push_back("one_worker"); return absl::OkStatus(); }},
       {"parity_simulated", "",
        [&] {
          ran.push_back("parity_simulated");
          return absl::AbortedError("max abs diff 0.5");
        }},
       {"two_worker", "",
        [&] { ran.push_back("two_worker"); return absl::OkStatus(); }}},
      &progress);
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(status.message(),
            "stage 'parity_simulated' failed: max abs diff 0.5");
  EXPECT_THAT(ran, ElementsAre("one_worker", "parity_simulated"));
  EXPECT_THAT(progress.str(),
              HasSubstr("[2/3] parity_simulated: FAILED after"));
  EXPECT_THAT(progress.str(), Not(HasSubstr("two_worker")));
}

TEST(StageRunnerTest, AStageWhoseProgramIsMissingFailsNamingStageAndProgram) {
  std::ostringstream progress;
  const std::string log = ::testing::TempDir() + "/stage_runner_test.log";
  absl::Status status = RunStages(
      {{"fault_drill", "kill a rank",
        [&] {
          return RunProcessToSuccess({{"/nonexistent/fault_drill"}, log});
        }}},
      &progress);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("stage 'fault_drill' failed"));
  EXPECT_THAT(status.message(), HasSubstr("/nonexistent/fault_drill"));
}

TEST(StageRunnerTest, AStageWithNothingToRunIsAnError) {
  std::ostringstream progress;
  absl::Status status = RunStages({{"empty", "", nullptr}}, &progress);
  EXPECT_THAT(status.message(), HasSubstr("stage 'empty' failed"));
}

}  // namespace
}  // namespace receipt_parity
