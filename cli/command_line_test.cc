#include "cli/command_line.h"

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

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

// Both spellings, in order, values with commas and '=' kept whole; the
// rest left for absl in its order; "--" ends the flags.
TEST(TakeRepeatedFlagTest, TakesEverySpellingAndKeepsTheRest) {
  std::vector<std::string> args = {"train", "--config=c.pbtxt", "--set", "model.conv_channels=[8,16]",
                                   "--out=o", "--set=world_size=3", "--settle=1", "--",
                                   "--set=x=1"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::vector<char*> rest;
  absl::StatusOr<std::vector<std::string>> values =
      TakeRepeatedFlag("set", static_cast<int>(argv.size()), argv.data(), &rest);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(*values, (std::vector<std::string>{"model.conv_channels=[8,16]", "world_size=3"}));
  std::vector<std::string> kept(rest.begin(), rest.end());
  EXPECT_EQ(kept, (std::vector<std::string>{"train", "--config=c.pbtxt", "--out=o", "--settle=1",
                                            "--", "--set=x=1"}));
}

TEST(TakeRepeatedFlagTest, ABareFlagAtTheEndIsRefused) {
  std::vector<std::string> args = {"train", "--set"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::vector<char*> rest;
  absl::StatusOr<std::vector<std::string>> values =
      TakeRepeatedFlag("set", static_cast<int>(argv.size()), argv.data(), &rest);
  EXPECT_EQ(values.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(values.status().message(), "--set needs a value");
}

}  // namespace
}  // namespace receipt_parity
