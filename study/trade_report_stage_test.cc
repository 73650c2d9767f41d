#include "study/trade_report_stage.h"

#include <filesystem>
#include <initializer_list>
#include <string>
#include <utility>

#include "artifacts/artifact_stamp.h"
#include "artifacts/run_folder_state.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/atomic_file.h"
#include "io/json_file.h"
#include "study/study_layout.h"
#include "study/trade_report_test_inputs.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
namespace layout = study_layout;
using ::testing::HasSubstr;

// A study folder holding the hand-made artifacts where the stages put them.
std::string MakeStudyDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  EXPECT_TRUE(WriteTestArtifacts(dir.string()).ok());
  return dir.string();
}

// Writes a further run's run_summary, validation and parity .json into
// `dir`/`run_dir`, as its stage leaves them.
void WriteRunWithParity(const std::string& dir, const std::string& run_dir,
                        const RunWithParityArtifacts& artifacts) {
  fs::create_directories(fs::path(dir) / run_dir);
  for (const auto& [file, message] :
       std::initializer_list<std::pair<const char*, const google::protobuf::Message*>>{
           {"run_summary.json", &artifacts.run.summary},
           {"validation.json", &artifacts.run.validation},
           {"parity.json", &artifacts.parity.message}}) {
    ASSERT_TRUE(WriteArtifact(dir + "/" + run_dir + "/" + file, artifacts.run.stamp,
                              *message)
                    .ok());
  }
}

TEST(TradeReportStageTest, WritesTheThreeFilesFromTheArtifacts) {
  const std::string dir = MakeStudyDir("complete");
  absl::StatusOr<TradeReport> report = WriteTradeReport(dir);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->one_worker().source(), "one_worker/reference");
  EXPECT_DOUBLE_EQ(report->two_workers().examples_per_second(), 2000.5);
  EXPECT_EQ(report->simulated_parity().source(), "parity_simulated/parity.json");
  ASSERT_EQ(report->sampler_audits_size(), 2);
  EXPECT_EQ(report->sampler_audits(1).policy(), "masked_tail");
  EXPECT_EQ(report->picture(), layout::kTradeReportPicture);

  TradeReport read_back;
  ASSERT_TRUE(ReadJsonFile(dir + "/trade_report.json", &read_back).ok());
  EXPECT_EQ(read_back.SerializeAsString(), report->SerializeAsString());
  EXPECT_THAT(*ReadFileToString(dir + "/trade_report.md"),
              HasSubstr("# Trade report"));
  EXPECT_THAT(*ReadFileToString(dir + "/trade_report.svg"),
              HasSubstr("</svg>"));
}

TEST(TradeReportStageTest, WithoutRecoveryOrCheckpointsTheyAreNotMeasured) {
  const std::string dir = MakeStudyDir("no_drill");
  absl::StatusOr<TradeReport> report = WriteTradeReport(dir);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->recovery().status(), kNotMeasured);
  EXPECT_EQ(report->checkpoint_cost().status(), kNotMeasured);
  EXPECT_THAT(*ReadFileToString(dir + "/trade_report.json"),
              HasSubstr("\"status\": \"not measured\""));
}

TEST(TradeReportStageTest, ReadsRecoveryAndTheTwoWorkerCheckpointCost) {
  const std::string dir = MakeStudyDir("with_drill");
  ASSERT_TRUE(
      WriteJsonFile(dir + "/recovery.json", TestRecovery(true)).ok());
  RunSummary summary = TestRun(2).summary;
  *summary.mutable_checkpoint() = TestCheckpointCost();
  ASSERT_TRUE(WriteArtifact(dir + "/two_worker/run_summary.json",
                            MakeArtifactStamp("fp-two", 1), summary)
                  .ok());
  absl::StatusOr<TradeReport> report = WriteTradeReport(dir);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->recovery().verdict(), kPass);
  EXPECT_EQ(report->recovery().source(), "recovery.json");
  EXPECT_EQ(report->checkpoint_cost().status(), kMeasured);
  EXPECT_EQ(report->checkpoint_cost().source(),
            "two_worker/run_summary.json checkpoint");
  EXPECT_DOUBLE_EQ(report->checkpoint_cost().cost().bytes_per_generation(),
                   123456);
}

TEST(TradeReportStageTest, WithoutTheMpiFolderTheRunOverMpiIsNotMeasured) {
  const std::string dir = MakeStudyDir("no_mpi");
  absl::StatusOr<TradeReport> report = WriteTradeReport(dir);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->two_workers_mpi().status(), kNotMeasured);
  EXPECT_EQ(report->two_workers_mpi().note(), kMpirunNotInstalled);
  EXPECT_THAT(*ReadFileToString(dir + "/trade_report.md"),
              HasSubstr("**not measured** (OpenMPI's mpirun is not installed)"));
}

TEST(TradeReportStageTest, ReadsTheRunOverMpiFromItsFolder) {
  const std::string dir = MakeStudyDir("with_mpi");
  WriteRunWithParity(dir, layout::kTwoWorkerMpiDir, TestMpiRun());
  absl::StatusOr<TradeReport> report = WriteTradeReport(dir);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->two_workers_mpi().status(), kMeasured);
  EXPECT_EQ(report->two_workers_mpi().source(), "two_worker_mpi");
  EXPECT_DOUBLE_EQ(report->two_workers_mpi().run().examples_per_second(), 2500.5);
  EXPECT_EQ(report->two_workers_mpi().parity().source(),
            "two_worker_mpi/parity.json");
  EXPECT_THAT(*ReadFileToString(dir + "/trade_report.svg"), HasSubstr(">two (MPI)<"));

  // A folder without its parity.json is a missing artifact, named.
  fs::remove(fs::path(dir) / "two_worker_mpi/parity.json");
  report = WriteTradeReport(dir);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(report.status().message(), HasSubstr("two_worker_mpi/parity.json"));
}

TEST(TradeReportStageTest, ReadsTheBf16RunFromItsFolderOrSaysNotMeasured) {
  const std::string dir = MakeStudyDir("with_bf16");
  absl::StatusOr<TradeReport> report = WriteTradeReport(dir);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->two_workers_bf16().status(), kNotMeasured);

  WriteRunWithParity(dir, layout::kTwoWorkerBf16Dir, TestBf16Run());
  report = WriteTradeReport(dir);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->two_workers_bf16().status(), kMeasured);
  EXPECT_EQ(report->two_workers_bf16().source(), "two_worker_bf16");
  EXPECT_DOUBLE_EQ(report->two_workers_bf16().run().examples_per_second(), 1800.5);
  EXPECT_EQ(report->two_workers_bf16().parity_verdict(), kPass);
  EXPECT_THAT(*ReadFileToString(dir + "/trade_report.svg"), HasSubstr(">two (bf16)<"));
  EXPECT_THAT(*ReadFileToString(dir + "/trade_report.md"),
              HasSubstr("## fp32 against bf16\n\n|"));

  // A folder without its validation.json is a missing artifact, named.
  fs::remove(fs::path(dir) / "two_worker_bf16/validation.json");
  report = WriteTradeReport(dir);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(report.status().message(), HasSubstr("two_worker_bf16/validation.json"));
}

TEST(TradeReportStageTest, ReadsTheAllRecipesRunAndItsConfigFromItsFolder) {
  const std::string dir = MakeStudyDir("with_all_recipes");
  const AllRecipesRunArtifacts all = TestAllRecipesRun();
  WriteRunWithParity(dir, layout::kTwoWorkerAllRecipesDir, all.run);
  // Without its run_state.json the run's config is unknown: named.
  absl::StatusOr<TradeReport> report = WriteTradeReport(dir);
  EXPECT_THAT(report.status().message(), HasSubstr("two_worker_all_recipes/run_state.json"));
  RunFolderState state;
  *state.mutable_config() = all.config;
  ASSERT_TRUE(WriteJsonFile(dir + "/two_worker_all_recipes/run_state.json", state).ok());
  report = WriteTradeReport(dir);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->two_workers_all_recipes().status(), kMeasured);
  EXPECT_EQ(report->two_workers_all_recipes().recipes(0), "accumulation_steps 2");
  EXPECT_THAT(*ReadFileToString(dir + "/trade_report.md"),
              HasSubstr("## Every recipe at once\n\n`two_worker_all_recipes` uses:"));
}

TEST(TradeReportStageTest, AMissingArtifactIsNamed) {
  const std::string dir = MakeStudyDir("missing");
  fs::remove(fs::path(dir) / "parity_simulated/parity.json");
  absl::StatusOr<TradeReport> report = WriteTradeReport(dir);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(report.status().message(),
              HasSubstr("parity_simulated/parity.json"));
  EXPECT_FALSE(fs::exists(fs::path(dir) / "trade_report.json"));
}

TEST(TradeReportStageTest, AMalformedArtifactIsNamed) {
  const std::string dir = MakeStudyDir("malformed");
  ASSERT_TRUE(WriteFileAtomically(dir + "/recovery.json",
                                  "{\"pass\": true, \"renamed_key\": 1}")
                  .ok());
  absl::StatusOr<TradeReport> report = WriteTradeReport(dir);
  EXPECT_FALSE(report.ok());
  EXPECT_THAT(report.status().message(), HasSubstr("recovery.json"));
}

}  // namespace
}  // namespace receipt_parity
