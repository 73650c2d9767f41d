// A worker for launcher_test: runs as a rank under the launcher (the
// torchrun variables and the launcher's own) and does what argv[1] says.
//   store_outlives_rank_0: rank 0 sets a key and exits 0 at once; the
//     others read it a moment later (the store is the launcher's) and
//     exit 0 when it is there.
//   rank_2_dies: rank 2 SIGKILLs itself; the others read membership 1
//     and report on it (runtime/membership.h).
//   rank_1_freezes: every rank beats; rank 1 stops itself (SIGSTOP) after
//     publishing 3 updates completed; the others wait to be stopped.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <thread>

#include "runtime/distributed_env.h"
#include "runtime/heartbeat.h"
#include "runtime/membership.h"
#include "runtime/store_host.h"

namespace receipt_parity {
namespace {

int StoreOutlivesRankZero(const DistributedEnv& env) {
  absl::StatusOr<c10::intrusive_ptr<c10d::TCPStore>> store =
      ConnectToStore(env.master_addr, env.master_port, std::chrono::seconds(5));
  if (!store.ok()) {
    std::cerr << store.status() << std::endl;
    return 1;
  }
  if (env.rank == 0) {
    (*store)->set("from-rank-0", std::vector<uint8_t>{42});
    return 0;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // rank 0 is gone by now
  return (*store)->get("from-rank-0") == std::vector<uint8_t>{42} ? 0 : 1;
}

int RankOneFreezes(const DistributedEnv& env) {
  absl::StatusOr<std::unique_ptr<RankHeartbeat>> heartbeat = RankHeartbeat::Start(
      env.master_addr, env.master_port, env.rank,
      std::chrono::milliseconds(env.heartbeat_interval_ms));
  if (!heartbeat.ok()) {
    std::cerr << heartbeat.status() << std::endl;
    return 1;
  }
  PublishUpdatesCompleted(3);
  std::this_thread::sleep_for(std::chrono::milliseconds(5 * env.heartbeat_interval_ms));
  if (env.rank == 1) raise(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::seconds(60));
  return 0;
}

// Rank 2 dies (SIGKILL); the others wait for membership 1, report on it
// and exit 0 when it holds them and not rank 2.
int RankTwoDies(const DistributedEnv& env) {
  if (env.rank == 2) raise(SIGKILL);
  absl::StatusOr<c10::intrusive_ptr<c10d::TCPStore>> store =
      ConnectToStore(env.master_addr, env.master_port, std::chrono::seconds(10));
  if (!store.ok()) return 1;
  absl::StatusOr<std::optional<std::vector<int>>> members =
      AwaitMembership(**store, 1, std::chrono::seconds(10));
  if (!members.ok() || !members->has_value()) return 1;
  if (**members != std::vector<int>{0, 1}) return 1;
  const std::string report = FormatReformed(ReformedReport{0.25, 1, 7});
  (*store)->set(ReformedKey(1, env.rank), std::vector<uint8_t>(report.begin(), report.end()));
  return 0;
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) {
  auto env = receipt_parity::DistributedEnvFromEnvironment();
  if (!env.ok() || !env->has_value() || argc < 2) return 2;
  if (!(*env)->launcher_hosts_store) return 2;
  if (std::strcmp(argv[1], "store_outlives_rank_0") == 0) {
    return receipt_parity::StoreOutlivesRankZero(**env);
  }
  if (std::strcmp(argv[1], "rank_2_dies") == 0) {
    return receipt_parity::RankTwoDies(**env);
  }
  if (std::strcmp(argv[1], "rank_1_freezes") == 0) {
    return receipt_parity::RankOneFreezes(**env);
  }
  return 2;
}
