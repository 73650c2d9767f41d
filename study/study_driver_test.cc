#include "study/study_driver.h"

#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "cli/command_line.h"
#include "cli/runfiles_locator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/atomic_file.h"
#include "study/study_layout.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string FreshDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / "study_driver_test" / name;
  fs::remove_all(dir);
  return dir.string();
}

TEST(StudyProgramsInTest, NamesTheProgramsOfTheStudysData) {
  // Under `bazel test` the environment names the runfiles.
  absl::StatusOr<RunfilesLocator> runfiles =
      RunfilesLocator::Create("study_driver_test");
  ASSERT_TRUE(runfiles.ok()) << runfiles.status();
  absl::StatusOr<StudyPrograms> found = StudyProgramsIn(*runfiles);
  ASSERT_TRUE(found.ok()) << found.status();
  const StudyPrograms& programs = *found;
  EXPECT_THAT(programs.train, EndsWith("/trainer/train"));
  EXPECT_THAT(programs.parity, EndsWith("/parity_check/parity"));
  EXPECT_THAT(programs.fault_drill, EndsWith("/drill/fault_drill"));
  EXPECT_THAT(programs.sampler_audit, EndsWith("/audit/audit"));
  // The test carries the study's programs as data: each is where the study
  // looks for it (a program that moved would not be found).
  for (const std::string& program :
       {programs.train, programs.parity, programs.fault_drill, programs.sampler_audit}) {
    EXPECT_EQ(access(program.c_str(), X_OK), 0) << program;
  }
  EXPECT_TRUE(fs::is_regular_file(fs::path(programs.configs_dir) /
                                  "two_worker_masked_tail.pbtxt"))
      << programs.configs_dir;
  for (const char* planted : {"libplanted_mistakes.so", "per_rank_clipping.pbtxt",
                              "functional_dropout.py"}) {
    EXPECT_TRUE(fs::is_regular_file(fs::path(programs.planted_dir) / planted))
        << programs.planted_dir << " " << planted;
  }
}

TEST(RunStudyTest, AForeignFolderIsBadInputAndKept) {
  const std::string out = FreshDir("foreign");
  fs::create_directories(out);
  ASSERT_TRUE(WriteFileAtomically(out + "/notes.txt", "mine").ok());
  std::ostringstream progress, errors;
  EXPECT_EQ(RunStudy({}, {out, 0}, progress, errors), kExitBadInput);
  EXPECT_THAT(errors.str(), HasSubstr("study: "));
  EXPECT_THAT(errors.str(), HasSubstr(out));
  EXPECT_THAT(progress.str(), IsEmpty());
  EXPECT_TRUE(fs::exists(out + "/notes.txt"));
}

TEST(RunStudyTest, AFailingStageIsARunFailureNamingIt) {
  const std::string out = FreshDir("missing_programs");
  StudyPrograms programs;
  programs.train = "/nonexistent/trainer/train";
  std::ostringstream progress, errors;
  EXPECT_EQ(RunStudy(programs, {out, 0}, progress, errors), kExitRunFailed);
  EXPECT_THAT(progress.str(), HasSubstr("study: writing into " + out + "/"));
  EXPECT_THAT(errors.str(), HasSubstr("study FAILED: stage 'one_worker' failed"));
  EXPECT_THAT(errors.str(), HasSubstr("/nonexistent/trainer/train"));
  EXPECT_TRUE(fs::exists(out + "/" + study_layout::kMarker));
}

}  // namespace
}  // namespace receipt_parity
