#include "conformance/rank_processes.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "runtime/distributed_env.h"
#include "runtime/process_group.h"

namespace receipt_parity {
namespace {

using Clock = std::chrono::steady_clock;

// Forks and execs one rank; returns its pid.
absl::StatusOr<pid_t> StartRank(const std::vector<std::string>& argv,
                                const std::vector<std::string>& environment) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    return absl::InternalError(absl::StrCat("cannot fork a rank: ", std::strerror(errno)));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    for (const std::string& entry : environment) putenv(strdup(entry.c_str()));
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

absl::StatusOr<std::vector<RankExit>> RunRankProcesses(const RankLaunch& launch) {
  absl::StatusOr<int> port = PickFreePort();
  if (!port.ok()) return port.status();
  const Clock::time_point start = Clock::now();
  std::vector<pid_t> pids;
  std::vector<RankExit> exits(launch.world_size);
  std::vector<bool> running(launch.world_size, false);
  for (int rank = 0; rank < launch.world_size; ++rank) {
    DistributedEnv env;
    env.rank = rank;
    env.world_size = launch.world_size;
    env.local_rank = rank;
    env.master_port = *port;
    absl::StatusOr<pid_t> pid = StartRank(launch.argv, ToEnvironmentEntries(env));
    if (!pid.ok()) {
      for (pid_t p : pids) kill(p, SIGKILL);
      for (pid_t p : pids) waitpid(p, nullptr, 0);
      return pid.status();
    }
    pids.push_back(*pid);
    running[rank] = true;
  }
  int left = launch.world_size;
  bool ending = false;
  while (left > 0) {
    for (int rank = 0; rank < launch.world_size; ++rank) {
      if (!running[rank]) continue;
      int status = 0;
      if (waitpid(pids[rank], &status, WNOHANG) == pids[rank]) {
        running[rank] = false;
        --left;
        exits[rank].wait_status = status;
        exits[rank].seconds = std::chrono::duration<double>(Clock::now() - start).count();
        if (rank == 0 && launch.end_with_rank_zero) ending = true;
      }
    }
    if (left == 0) break;
    if (ending || Clock::now() - start > launch.deadline) {
      for (int rank = 0; rank < launch.world_size; ++rank) {
        if (!running[rank]) continue;
        kill(pids[rank], SIGKILL);
        waitpid(pids[rank], &exits[rank].wait_status, 0);
        exits[rank].killed = true;
        exits[rank].seconds = std::chrono::duration<double>(Clock::now() - start).count();
        running[rank] = false;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return exits;
}

}  // namespace receipt_parity
