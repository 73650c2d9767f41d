#include "runtime/subprocess.h"

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string LogPath(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/subprocess_test/" + name;
  std::filesystem::remove(path);
  return path;
}

TEST(SubprocessTest, RunsTheChildWithItsOutputInTheLog) {
  const std::string log = LogPath("ok.log");
  absl::StatusOr<ProcessExit> exit = RunProcess(
      {{"/bin/sh", "-c", "echo to-stdout; echo to-stderr >&2"}, log});
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_TRUE(exit->ok());
  EXPECT_EQ(exit->exit_code(), 0);
  const std::string text = LastLines(log, 10);
  EXPECT_THAT(text, HasSubstr("$ /bin/sh -c"));
  EXPECT_THAT(text, HasSubstr("to-stdout"));
  EXPECT_THAT(text, HasSubstr("to-stderr"));
}

TEST(SubprocessTest, ReportsTheExitCodeWithItsMeaningAndTheLogTail) {
  const std::string log = LogPath("exit3.log");
  absl::Status status = RunProcessToSuccess(
      {{"/bin/sh", "-c", "echo why it failed; exit 3"}, log},
      {{2, "bad input"}, {3, "parity failed"}});
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(status.message(), HasSubstr("exited with status 3 (parity failed)"));
  EXPECT_THAT(status.message(), Not(HasSubstr("bad input")));
  EXPECT_THAT(status.message(), HasSubstr(log));
  EXPECT_THAT(status.message(), HasSubstr("why it failed"));
}

TEST(SubprocessTest, ReportsASignal) {
  absl::StatusOr<ProcessExit> exit =
      RunProcess({{"/bin/sh", "-c", "kill -9 $$"}, LogPath("killed.log")});
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_FALSE(exit->ok());
  EXPECT_EQ(exit->exit_code(), -1);
  EXPECT_THAT(exit->Describe(), HasSubstr("killed by signal 9"));
}

TEST(SubprocessTest, AMissingProgramIsNotFoundAndNamed) {
  absl::StatusOr<ProcessExit> exit =
      RunProcess({{"/nonexistent/trainer/train", "--config=x"},
                  LogPath("missing.log")});
  EXPECT_EQ(exit.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(exit.status().message(), HasSubstr("/nonexistent/trainer/train"));
  // A folder is not a program either.
  exit = RunProcess({{"/tmp"}, LogPath("folder.log")});
  EXPECT_EQ(exit.status().code(), absl::StatusCode::kNotFound);
}

TEST(SubprocessTest, AnUnwritableLogIsAnError) {
  absl::StatusOr<ProcessExit> exit =
      RunProcess({{"/bin/true"}, "/proc/no-such-dir/x.log"});
  EXPECT_EQ(exit.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(exit.status().message(), HasSubstr("/proc/no-such-dir/x.log"));
}

}  // namespace
}  // namespace receipt_parity
