// The study's two_worker_mpi stage with the REAL train binary and shipped
// config under a real mpirun (as root inside bazel test the launcher adds
// what OpenMPI needs): the folder it leaves gives trade_report.json's
// two_workers_mpi "measured", its parity passing, over mpi_allreduce. The
// other stages' artifacts are the hand-made ones. Skipped where OpenMPI's
// mpirun is not installed (the stage does not run there).
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli/runfiles_locator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/atomic_file.h"
#include "runtime/mpirun_launcher.h"
#include "study/stage_runner.h"
#include "study/study_driver.h"
#include "study/study_layout.h"
#include "study/study_stages.h"
#include "study/trade_report_stage.h"
#include "study/trade_report_test_inputs.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(StudyMpiStageTest, TheRealRunOverMpiIsMeasuredInTheTradeReport) {
  if (!MpirunInstalled()) GTEST_SKIP() << "OpenMPI's mpirun is not installed";
  absl::StatusOr<RunfilesLocator> runfiles =
      RunfilesLocator::Create("study_mpi_stage_test");
  ASSERT_TRUE(runfiles.ok()) << runfiles.status();
  const std::string out = (fs::path(::testing::TempDir()) / "study").string();
  ASSERT_TRUE(PrepareStudyFolder(out).ok());
  ASSERT_TRUE(WriteTestArtifacts(out).ok());

  std::vector<Stage> mpi_stage;
  absl::StatusOr<StudyPrograms> programs = StudyProgramsIn(*runfiles);
  ASSERT_TRUE(programs.ok()) << programs.status();
  for (Stage& stage : StudyStages(*programs, {out, 0})) {
    if (stage.name == "two_worker_mpi") mpi_stage.push_back(std::move(stage));
  }
  ASSERT_EQ(mpi_stage.size(), 1u);
  std::ostringstream progress;
  absl::Status status = RunStages(mpi_stage, &progress);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_THAT(*ReadFileToString(out + "/logs/two_worker_mpi.log"),
              HasSubstr("launcher: mpirun -np 2"));

  absl::StatusOr<TradeReport> report = WriteTradeReport(out);
  ASSERT_TRUE(report.ok()) << report.status();
  const MpiFigures& mpi = report->two_workers_mpi();
  EXPECT_EQ(mpi.status(), kMeasured);
  EXPECT_EQ(mpi.source(), study_layout::kTwoWorkerMpiDir);
  EXPECT_EQ(mpi.run().world_size(), 2);
  EXPECT_EQ(mpi.run().updates(), 210);
  EXPECT_GT(mpi.run().examples_per_second(), 0);
  EXPECT_EQ(mpi.parity_verdict(), kPass);
  EXPECT_EQ(mpi.parity().reducer(), "mpi_allreduce");
  EXPECT_THAT(*ReadFileToString(out + "/trade_report.json"),
              HasSubstr("\"status\": \"measured\""));
  EXPECT_THAT(*ReadFileToString(out + "/trade_report.md"),
              HasSubstr("| two-worker run over MPI (real processes) "
                        "`two_worker_mpi/parity.json` | **pass** |"));
}

}  // namespace
}  // namespace receipt_parity
