#include "runtime/launcher.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cpu_pinning.h"
#include "runtime/process_group.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Each launched rank writes its own Cpus_allowed_list line to DIR/rank_R.
std::vector<std::string> LaunchAndReadAffinity(int world_size, bool pin) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  LaunchOptions options;
  options.world_size = world_size;
  options.master_port = 1;  // nothing connects
  options.pin_cpus = pin;
  options.program = "/bin/sh";
  options.args = {"-c", absl::StrCat("grep Cpus_allowed_list: /proc/self/status > ",
                                     dir, "/rank_$RANK")};
  LaunchResult result;
  const absl::Status status = LaunchLocalWorkers(options, &result);
  EXPECT_TRUE(status.ok()) << status;
  std::vector<std::string> lists;
  for (int rank = 0; rank < world_size; ++rank) {
    std::string line = ReadFile(absl::StrCat(dir, "/rank_", rank));
    const size_t tab = line.find_first_of(" \t", line.find(':'));
    lists.push_back(std::string(absl::StripAsciiWhitespace(line.substr(tab))));
  }
  return lists;
}

std::string OwnAffinity() {
  const std::vector<int> cpus = *AllowedCpus();
  std::vector<std::string> parts;
  for (int cpu : cpus) parts.push_back(absl::StrCat(cpu));
  return absl::StrJoin(parts, ",");
}

// The kernel writes ranges ("0-1"); ours as a comma list of single CPUs.
std::string Expand(const std::string& list) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(list, ',')) {
    std::vector<std::string> ends = absl::StrSplit(part, '-');
    const int first = std::stoi(ends[0]);
    const int last = ends.size() > 1 ? std::stoi(ends[1]) : first;
    for (int cpu = first; cpu <= last; ++cpu) out.push_back(absl::StrCat(cpu));
  }
  return absl::StrJoin(out, ",");
}

TEST(LauncherTest, PinsRankRToTheRthAllowedCpuWhenThereAreEnough) {
  const std::vector<int> cpus = *AllowedCpus();
  ASSERT_FALSE(cpus.empty());
  const int world = static_cast<int>(cpus.size()) >= 2 ? 2 : 1;
  const std::vector<std::string> lists = LaunchAndReadAffinity(world, /*pin=*/true);
  for (int rank = 0; rank < world; ++rank) {
    EXPECT_EQ(lists[rank], absl::StrCat(cpus[rank])) << "rank " << rank;
  }
}

TEST(LauncherTest, MoreRanksThanCpusOrPinningOffLeavesTheMaskAlone) {
  const std::vector<int> cpus = *AllowedCpus();
  const int too_many = static_cast<int>(cpus.size()) + 1;
  for (const std::string& list : LaunchAndReadAffinity(too_many, /*pin=*/true)) {
    EXPECT_EQ(Expand(list), OwnAffinity());
  }
  for (const std::string& list : LaunchAndReadAffinity(2, /*pin=*/false)) {
    EXPECT_EQ(Expand(list), OwnAffinity());
  }
}

// The worker binary beside this test (runtime/launcher_test_worker.cc).
std::string TestWorker() {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/", std::getenv("TEST_WORKSPACE"),
                      "/runtime/launcher_test_worker");
}

LaunchOptions HostingLauncher(int world_size, const std::string& behaviour) {
  LaunchOptions options;
  options.world_size = world_size;
  options.master_port = *PickFreePort();
  options.program = TestWorker();
  options.args = {behaviour};
  options.host_store = true;
  options.grace = std::chrono::seconds(1);
  return options;
}

TEST(LauncherTest, TheStoreItHostsOutlivesRankZero) {
  LaunchResult result;
  const absl::Status status =
      LaunchLocalWorkers(HostingLauncher(3, "store_outlives_rank_0"), &result);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_TRUE(result.losses.empty());
}

TEST(LauncherTest, ARankWhoseHeartbeatStallsIsKilledAndNamedWithinTheTimeout) {
  LaunchOptions options = HostingLauncher(3, "rank_1_freezes");
  options.heartbeat_timeout = std::chrono::milliseconds(500);
  LaunchResult result;
  const auto start = std::chrono::steady_clock::now();
  const absl::Status status = LaunchLocalWorkers(options, &result);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(absl::IsAborted(status)) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("rank 1 stopped answering: no heartbeat for"));
  EXPECT_EQ(result.failed_rank, 1);
  ASSERT_EQ(result.losses.size(), 1u);
  EXPECT_EQ(result.losses[0].rank, 1);
  EXPECT_EQ(result.losses[0].updates_completed, 3);
  EXPECT_GE(result.losses[0].detection_seconds, 0.5);
  // Far less than the workers' own 60 s: the heartbeat found it, and the
  // others were stopped (SIGTERM) at once.
  EXPECT_LT(seconds, 15);
}

TEST(LauncherTest, WithSurvivorsGoingOnALostRankLeavesAndTheOthersFinish) {
  LaunchOptions options = HostingLauncher(3, "rank_2_dies");
  options.survivors_go_on = true;
  LaunchResult result;
  const absl::Status status = LaunchLocalWorkers(options, &result);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(result.failed_rank, -1);
  ASSERT_EQ(result.losses.size(), 1u);
  const RankLoss& loss = result.losses[0];
  EXPECT_EQ(loss.rank, 2);
  EXPECT_EQ(loss.why, "was killed by signal 9 (Killed)");
  EXPECT_EQ(loss.membership, 1);
  EXPECT_EQ(loss.survivors, (std::vector<int>{0, 1}));
  // The survivors' reports, read back.
  EXPECT_EQ(loss.reforming_seconds, 0.25);
  EXPECT_EQ(loss.updates_redone, 1);
  EXPECT_EQ(loss.went_on_from_update, 7);
}

TEST(LauncherTest, WithoutSurvivorsGoingOnALostRankStopsTheOthers) {
  LaunchResult result;
  const absl::Status status = LaunchLocalWorkers(HostingLauncher(3, "rank_2_dies"), &result);
  EXPECT_TRUE(absl::IsAborted(status)) << status;
  EXPECT_EQ(result.failed_rank, 2);
  ASSERT_EQ(result.losses.size(), 1u);
  EXPECT_EQ(result.losses[0].membership, 0);
}

TEST(CpuPinningTest, CpuForRankAndItsDescription) {
  EXPECT_EQ(CpuForRank({2, 5, 7}, 1, 2), 5);
  EXPECT_EQ(CpuForRank({2}, 0, 2), std::nullopt);
  EXPECT_EQ(DescribePinning({2, 5}, 2), "ranks pinned: rank 0 -> CPU 2, rank 1 -> CPU 5");
  EXPECT_THAT(DescribePinning({0}, 2), HasSubstr("not pinned: 1 CPU(s) for 2 ranks"));
}

}  // namespace
}  // namespace receipt_parity
