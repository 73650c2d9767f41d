#include "io/run_folder_lock.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Fresh(const std::string& name) {
  const fs::path dir = fs::path(std::getenv("TEST_TMPDIR")) / name;
  fs::remove_all(dir);
  return dir.string();
}

std::string Contents(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(RunFolderLockTest, TheHolderIsNamedAndASecondRunIsRefused) {
  const std::string dir = Fresh("held");
  absl::StatusOr<RunFolderLock> first = RunFolderLock::Acquire(dir);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(first->holder(), StartsWith("host="));
  EXPECT_THAT(first->holder(), HasSubstr(absl::StrCat(" pid=", getpid(), " run_id=")));
  EXPECT_EQ(Contents(dir + "/LOCK"), first->holder() + "\n");
  // Another open file description: what a second process gets.
  absl::StatusOr<RunFolderLock> second = RunFolderLock::Acquire(dir);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr(dir + " is in use by another run (" + first->holder()));
  // The refused attempt did not touch the holder's record.
  EXPECT_EQ(Contents(dir + "/LOCK"), first->holder() + "\n");
}

TEST(RunFolderLockTest, AFolderItMadeAndNothingWasWrittenToIsRemoved) {
  const std::string dir = Fresh("made");
  { ASSERT_TRUE(RunFolderLock::Acquire(dir).ok()); }
  EXPECT_FALSE(fs::exists(dir));
  // With something written, or a folder that existed, everything stays.
  {
    absl::StatusOr<RunFolderLock> lock = RunFolderLock::Acquire(dir);
    ASSERT_TRUE(lock.ok());
    std::ofstream(dir + "/run_summary.json") << "{}";
  }
  EXPECT_TRUE(fs::exists(dir + "/LOCK"));
  const std::string existing = Fresh("existing");
  fs::create_directories(existing);
  { ASSERT_TRUE(RunFolderLock::Acquire(existing).ok()); }
  EXPECT_TRUE(fs::exists(existing + "/LOCK"));
}

TEST(RunFolderLockTest, ReleasedOnDestructionAndOnTheHoldersDeath) {
  const std::string dir = Fresh("released");
  fs::create_directories(dir);
  { ASSERT_TRUE(RunFolderLock::Acquire(dir).ok()); }
  EXPECT_TRUE(RunFolderLock::Acquire(dir).ok());
  // A child takes the lock and is killed: its LOCK file stays, and blocks
  // nothing.
  const pid_t child = fork();
  if (child == 0) {
    absl::StatusOr<RunFolderLock> lock = RunFolderLock::Acquire(dir);
    if (!lock.ok()) _exit(3);
    kill(getpid(), SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_THAT(Contents(dir + "/LOCK"), HasSubstr(absl::StrCat("pid=", child)));
  absl::StatusOr<RunFolderLock> after = RunFolderLock::Acquire(dir);
  EXPECT_TRUE(after.ok()) << after.status();
}

TEST(RunFolderLockTest, TheLaunchersLockCoversItsChildrenOnly) {
  const std::string dir = Fresh("launcher");
  absl::StatusOr<RunFolderLock> lock = RunFolderLock::Acquire(dir);
  ASSERT_TRUE(lock.ok());
  setenv(kRunLockHeldEnv, absl::StrCat(lock->path(), ":", getppid()).c_str(), 1);
  EXPECT_TRUE(ParentHoldsRunFolderLock(dir));
  EXPECT_FALSE(ParentHoldsRunFolderLock(Fresh("other")));
  setenv(kRunLockHeldEnv, absl::StrCat(lock->path(), ":", getpid()).c_str(), 1);
  EXPECT_FALSE(ParentHoldsRunFolderLock(dir));
  unsetenv(kRunLockHeldEnv);
  EXPECT_FALSE(ParentHoldsRunFolderLock(dir));
}

}  // namespace
}  // namespace receipt_parity
