#include "runtime/launcher.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "logging/glog.h"
#include "runtime/cpu_pinning.h"
#include "runtime/distributed_env.h"
#include "runtime/mpirun_launcher.h"
#include "runtime/preemption.h"
#include "runtime/wait_status.h"

namespace receipt_parity {
namespace {

// `cpu` < 0: not pinned.
pid_t StartWorker(const LaunchOptions& options, int rank, int cpu) {
  DistributedEnv env;
  env.rank = rank;
  env.world_size = options.world_size;
  env.local_rank = rank;
  env.master_addr = options.master_addr;
  env.master_port = options.master_port;
  const std::vector<std::string> entries = ToEnvironmentEntries(env);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0) return pid;
  // Child: die with the launcher, then become the worker (with the
  // preemption signals as by default: the worker decides).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  UnblockPreemptionSignals();
  if (getppid() != parent) _exit(127);
  if (cpu >= 0 && PinSelfToCpu(cpu) != 0) _exit(127);
  for (const std::string& entry : entries) putenv(strdup(entry.c_str()));
  std::vector<std::string> argv_storage = {options.program};
  argv_storage.insert(argv_storage.end(), options.args.begin(),
                      options.args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(options.program.c_str(), argv.data());
  _exit(127);
}

// The CPU of every rank (-1: not pinned), logged.
std::vector<int> RankCpus(const LaunchOptions& options) {
  std::vector<int> rank_cpus(options.world_size, -1);
  if (!options.pin_cpus) return rank_cpus;
  absl::StatusOr<std::vector<int>> cpus = AllowedCpus();
  if (!cpus.ok()) {
    LOG(WARNING) << "launcher: ranks not pinned: " << cpus.status().message();
    return rank_cpus;
  }
  LOG(INFO) << "launcher: " << DescribePinning(*cpus, options.world_size);
  for (int rank = 0; rank < options.world_size; ++rank) {
    rank_cpus[rank] = CpuForRank(*cpus, rank, options.world_size).value_or(-1);
  }
  return rank_cpus;
}

}  // namespace

absl::Status LaunchLocalWorkers(const LaunchOptions& options,
                                LaunchResult* result) {
  if (options.under_mpirun) return LaunchUnderMpirun(options, result);
  result->wait_status.assign(options.world_size, 0);
  result->failed_rank = -1;
  std::vector<pid_t> pids(options.world_size, -1);
  // What the signal forwarder may signal: the workers not yet reaped.
  std::shared_ptr<std::vector<std::atomic<pid_t>>> live_pids;
  const std::vector<int> cpus = RankCpus(options);
  for (int rank = 0; rank < options.world_size; ++rank) {
    pids[rank] = StartWorker(options, rank, cpus[rank]);
    if (pids[rank] < 0) {
      for (int r = 0; r < rank; ++r) kill(pids[r], SIGKILL);
      for (int r = 0; r < rank; ++r) waitpid(pids[r], nullptr, 0);
      return absl::InternalError(
          absl::StrCat("cannot start rank ", rank, ": ", std::strerror(errno)));
    }
  }
  int running = options.world_size;
  if (options.forward_preemption_signals) {
    auto live = std::make_shared<std::vector<std::atomic<pid_t>>>(options.world_size);
    for (int r = 0; r < options.world_size; ++r) (*live)[r].store(pids[r]);
    live_pids = live;
    StartSignalForwarding([live](int signal) {
      LOG(WARNING) << "launcher: " << strsignal(signal) << " received: passed on to the workers";
      for (std::atomic<pid_t>& pid : *live) {
        if (pid.load() > 0) kill(pid.load(), signal);
      }
    });
  }
  auto forget = [&](int rank) {
    pids[rank] = -1;
    if (live_pids != nullptr) (*live_pids)[rank].store(-1);
  };
  int preempted = 0;
  auto rank_of = [&](pid_t pid) {
    for (int r = 0; r < options.world_size; ++r) {
      if (pids[r] == pid) return r;
    }
    return -1;
  };
  // Ranks that were stopped (SIGSTOP) when the run failed: they had stopped
  // answering, and a SIGTERM would wait for them to be continued, so they
  // are killed at once and named.
  std::vector<int> stopped;
  auto stop_others = [&] {
    for (int r = 0; r < options.world_size; ++r) {
      if (pids[r] > 0 && ProcessIsStopped(pids[r])) {
        stopped.push_back(r);
        kill(pids[r], SIGKILL);
      } else if (pids[r] > 0) {
        kill(pids[r], SIGTERM);
      }
    }
    const auto deadline = std::chrono::steady_clock::now() + options.grace;
    while (running > 0 && std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid > 0) {
        int r = rank_of(pid);
        if (r >= 0) {
          result->wait_status[r] = status;
          forget(r);
          --running;
        }
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    for (int r = 0; r < options.world_size; ++r) {
      if (pids[r] > 0) {
        kill(pids[r], SIGKILL);
        waitpid(pids[r], &result->wait_status[r], 0);
        forget(r);
        --running;
      }
    }
  };
  while (running > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    int rank = rank_of(pid);
    if (rank < 0) continue;
    result->wait_status[rank] = status;
    forget(rank);
    --running;
    if (WIFEXITED(status) && WEXITSTATUS(status) == kPreemptedExitCode) {
      ++preempted;
      continue;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      result->failed_rank = rank;
      LOG(ERROR) << "launcher: rank " << rank << " " << DescribeWaitStatus(status)
                 << "; stopping the other ranks";
      stop_others();
      std::string frozen;
      for (int r : stopped) {
        absl::StrAppend(&frozen, "; rank ", r,
                        " had stopped answering (it was stopped: state T, SIGSTOP or a "
                        "debugger) and was killed");
      }
      if (!frozen.empty()) LOG(ERROR) << "launcher: " << frozen.substr(2);
      return absl::AbortedError(absl::StrCat(
          "rank ", rank, " ", DescribeWaitStatus(status), frozen,
          "; stopped the other ranks"));
    }
  }
  if (preempted > 0) {
    return absl::AbortedError(absl::StrCat(
        preempted, " of ", options.world_size,
        " ranks were preempted (SIGTERM or SIGUSR1) and stopped at an update boundary; run "
        "the same command again to resume"));
  }
  return absl::OkStatus();
}

}  // namespace receipt_parity
