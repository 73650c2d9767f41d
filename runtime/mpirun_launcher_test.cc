// The mpirun command line, and a real mpirun starting this test binary as
// two workers: their exits, and the parent named in the environment.
#include "runtime/mpirun_launcher.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

constexpr char kParentVariable[] = "MPIRUN_LAUNCHER_TEST_PARENT";

bool Contains(const std::vector<std::string>& command, const std::string& sequence) {
  return absl::StrCat(" ", absl::StrJoin(command, " "), " ").find(" " + sequence + " ") !=
         std::string::npos;
}

LaunchOptions TwoWorkers(std::vector<std::string> args) {
  LaunchOptions options;
  options.world_size = 2;
  options.master_addr = "127.0.0.1";
  options.master_port = 29511;
  options.args = std::move(args);
  options.under_mpirun = true;
  return options;
}

TEST(MpirunCommandLineTest, CarriesTheDefaultsTheEnvironmentAndTheProgram) {
  setenv("TMPDIR", "/tmp", 1);
  const std::vector<std::string> command =
      MpirunCommandLine(TwoWorkers({"--config=c.pbtxt", "--out=o"}), "/bin/train");
  EXPECT_TRUE(Contains(command, "-np 2"));
  EXPECT_TRUE(Contains(command, "--oversubscribe"));
  EXPECT_TRUE(Contains(command, "--mca pml ob1"));
  EXPECT_TRUE(Contains(command, "--mca btl self,vader"));
  EXPECT_TRUE(Contains(command, "--mca mpi_yield_when_idle 1"));
  EXPECT_TRUE(Contains(command, "-x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=29511"));
  EXPECT_EQ(Contains(command, "--allow-run-as-root"), getuid() == 0);
  EXPECT_FALSE(Contains(command, "--mca orte_tmpdir_base /tmp"));
  ASSERT_GE(command.size(), 3u);
  EXPECT_EQ(command[command.size() - 3], "/bin/train");
  EXPECT_EQ(command.back(), "--out=o");
  setenv("TMPDIR", ("/tmp/" + std::string(100, 'x')).c_str(), 1);
  EXPECT_TRUE(Contains(MpirunCommandLine(TwoWorkers({}), "/bin/train"),
                       "--mca orte_tmpdir_base /tmp"));
  unsetenv("TMPDIR");
}

TEST(MpirunPathTest, NamesTheExecutableFoundOrNothing) {
  const char* saved_path = std::getenv("PATH");
  const std::string path = saved_path == nullptr ? "" : saved_path;
  setenv("MPIRUN", "/bin/true", 1);
  EXPECT_EQ(MpirunPath(), "/bin/true");
  setenv("MPIRUN", "true", 1);  // looked up in PATH
  setenv("PATH", "/nonexistent:/bin", 1);
  EXPECT_EQ(MpirunPath(), "/bin/true");
  EXPECT_TRUE(MpirunInstalled());
  setenv("MPIRUN", "no-such-mpirun-here", 1);
  EXPECT_EQ(MpirunPath(), "");
  EXPECT_FALSE(MpirunInstalled());
  setenv("PATH", path.c_str(), 1);
  unsetenv("MPIRUN");
}

TEST(LaunchUnderMpirunTest, WorkersThatExitZeroAreOk) {
  setenv(kParentVariable, absl::StrCat("lock:", getpid()).c_str(), 1);
  LaunchOptions options = TwoWorkers({"worker", "0"});
  options.parent_pid_variables = {kParentVariable};
  LaunchResult result;
  const absl::Status status = LaunchUnderMpirun(options, &result);
  EXPECT_TRUE(status.ok()) << status;
  ASSERT_EQ(result.wait_status.size(), 1u);
  EXPECT_EQ(result.failed_rank, -1);
}

TEST(LaunchUnderMpirunTest, AFailingWorkerEndsTheJobNonZero) {
  setenv(kParentVariable, absl::StrCat("lock:", getpid()).c_str(), 1);
  LaunchOptions options = TwoWorkers({"worker", "3"});
  options.parent_pid_variables = {kParentVariable};
  LaunchResult result;
  const absl::Status status = LaunchUnderMpirun(options, &result);
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(status.message(), HasSubstr("mpirun exited with status 3"));
  ASSERT_EQ(result.wait_status.size(), 1u);
  EXPECT_TRUE(WIFEXITED(result.wait_status[0]));
  EXPECT_EQ(WEXITSTATUS(result.wait_status[0]), 3);
}

// A worker started by mpirun: exits 4 unless the parent variable names its
// parent (mpirun); rank 1 then exits with argv[2].
int RunWorker(char** argv) {
  const char* parent = std::getenv(kParentVariable);
  if (parent == nullptr || std::string(parent) != absl::StrCat("lock:", getppid())) return 4;
  int code = 0;
  if (std::string(std::getenv("OMPI_COMM_WORLD_RANK")) == "1" &&
      absl::SimpleAtoi(argv[2], &code)) {
    return code;
  }
  return 0;
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "worker") == 0) {
    return receipt_parity::RunWorker(argv);
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
