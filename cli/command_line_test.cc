#include "cli/command_line.h"

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

// Restores the working directory and BUILD_WORKING_DIRECTORY.
class ChangeToCallersDirectoryTest : public ::testing::Test {
 protected:
  void TearDown() override {
    fs::current_path(saved_);
    unsetenv("BUILD_WORKING_DIRECTORY");
  }
  const fs::path saved_ = fs::current_path();
};

TEST_F(ChangeToCallersDirectoryTest, RelativePathsBecomeTheCallers) {
  const fs::path caller = fs::path(::testing::TempDir()) / "caller";
  fs::create_directories(caller / "out");
  setenv("BUILD_WORKING_DIRECTORY", caller.c_str(), 1);
  ChangeToCallersDirectory();
  EXPECT_TRUE(fs::equivalent(fs::current_path(), caller));
  EXPECT_TRUE(fs::equivalent(fs::absolute("out"), caller / "out"));
}

TEST_F(ChangeToCallersDirectoryTest, OutsideBazelRunNothingChanges) {
  unsetenv("BUILD_WORKING_DIRECTORY");
  ChangeToCallersDirectory();
  EXPECT_EQ(fs::current_path(), saved_);
}

TEST_F(ChangeToCallersDirectoryTest, AMissingDirectoryLeavesTheCurrentOne) {
  setenv("BUILD_WORKING_DIRECTORY", "/nonexistent/caller", 1);
  ChangeToCallersDirectory();
  EXPECT_EQ(fs::current_path(), saved_);
}

TEST(ExitCodeForTest, BadInputIsTwoAnythingElseOne) {
  EXPECT_EQ(ExitCodeFor(absl::InvalidArgumentError("x")), kExitBadInput);
  EXPECT_EQ(ExitCodeFor(absl::NotFoundError("x")), kExitBadInput);
  EXPECT_EQ(ExitCodeFor(absl::DeadlineExceededError("x")), kExitRunFailed);
  EXPECT_EQ(ExitCodeFor(absl::InternalError("x")), kExitRunFailed);
  EXPECT_EQ(kExitBadInput, 2);
  EXPECT_EQ(kExitRunFailed, 1);
  EXPECT_EQ(kExitCheckFailed, 3);
}

}  // namespace
}  // namespace receipt_parity
