#include "runtime/launcher.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
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

// The started workers: which are not yet reaped, and their wait statuses.
class WorkerSet {
 public:
  WorkerSet(std::vector<pid_t> pids, LaunchResult* result)
      : pids_(std::move(pids)), result_(result), running_(pids_.size()) {}

  int running() const { return running_; }

  // Workers the signal forwarder may signal: those not yet reaped.
  void ForwardPreemptionSignals() {
    auto live = std::make_shared<std::vector<std::atomic<pid_t>>>(pids_.size());
    for (size_t r = 0; r < pids_.size(); ++r) (*live)[r].store(pids_[r]);
    live_pids_ = live;
    StartSignalForwarding([live](int signal) {
      LOG(WARNING) << "launcher: " << strsignal(signal) << " received: passed on to the workers";
      for (std::atomic<pid_t>& pid : *live) {
        if (pid.load() > 0) kill(pid.load(), signal);
      }
    });
  }

  // Records `status` for the worker `pid`; its rank, or -1 for no worker.
  int Reaped(pid_t pid, int status) {
    for (size_t r = 0; r < pids_.size(); ++r) {
      if (pids_[r] != pid) continue;
      result_->wait_status[r] = status;
      pids_[r] = -1;
      if (live_pids_ != nullptr) (*live_pids_)[r].store(-1);
      --running_;
      return static_cast<int>(r);
    }
    return -1;
  }

  // Ends every worker still running: SIGTERM, and SIGKILL after `grace`.
  // Ranks that were stopped (SIGSTOP) had stopped answering, and a SIGTERM
  // would wait for them to be continued, so they are killed at once; their
  // ranks are returned.
  std::vector<int> StopAll(std::chrono::milliseconds grace) {
    std::vector<int> stopped;
    for (size_t r = 0; r < pids_.size(); ++r) {
      if (pids_[r] <= 0) continue;
      const bool is_stopped = ProcessIsStopped(pids_[r]);
      if (is_stopped) stopped.push_back(static_cast<int>(r));
      kill(pids_[r], is_stopped ? SIGKILL : SIGTERM);
    }
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (running_ > 0 && std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid > 0) {
        Reaped(pid, status);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    for (size_t r = 0; r < pids_.size(); ++r) {
      if (pids_[r] <= 0) continue;
      const pid_t pid = pids_[r];
      int status = 0;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      Reaped(pid, status);
    }
    return stopped;
  }

 private:
  std::vector<pid_t> pids_;
  LaunchResult* result_;
  int running_;
  std::shared_ptr<std::vector<std::atomic<pid_t>>> live_pids_;
};

// Starts one worker per rank; on a failed start none is left running.
absl::StatusOr<std::vector<pid_t>> StartWorkers(const LaunchOptions& options) {
  std::vector<pid_t> pids(options.world_size, -1);
  const std::vector<int> cpus = RankCpus(options);
  for (int rank = 0; rank < options.world_size; ++rank) {
    pids[rank] = StartWorker(options, rank, cpus[rank]);
    if (pids[rank] < 0) {
      const int error = errno;
      for (int r = 0; r < rank; ++r) kill(pids[r], SIGKILL);
      for (int r = 0; r < rank; ++r) waitpid(pids[r], nullptr, 0);
      return absl::InternalError(
          absl::StrCat("cannot start rank ", rank, ": ", std::strerror(error)));
    }
  }
  return pids;
}

// The run's error after `rank` ended with `status`, the others stopped.
absl::Status RankFailed(int rank, int status, const std::vector<int>& stopped) {
  std::string frozen;
  for (int r : stopped) {
    absl::StrAppend(&frozen, "; rank ", r,
                    " had stopped answering (it was stopped: state T, SIGSTOP or a "
                    "debugger) and was killed");
  }
  if (!frozen.empty()) LOG(ERROR) << "launcher: " << frozen.substr(2);
  return absl::AbortedError(absl::StrCat("rank ", rank, " ", DescribeWaitStatus(status),
                                         frozen, "; stopped the other ranks"));
}

}  // namespace

absl::Status LaunchLocalWorkers(const LaunchOptions& options,
                                LaunchResult* result) {
  if (options.under_mpirun) return LaunchUnderMpirun(options, result);
  result->wait_status.assign(options.world_size, 0);
  result->failed_rank = -1;
  absl::StatusOr<std::vector<pid_t>> pids = StartWorkers(options);
  if (!pids.ok()) return pids.status();
  WorkerSet workers(*std::move(pids), result);
  if (options.forward_preemption_signals) workers.ForwardPreemptionSignals();
  int preempted = 0;
  while (workers.running() > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    const int rank = workers.Reaped(pid, status);
    if (rank < 0) continue;
    if (WIFEXITED(status) && WEXITSTATUS(status) == kPreemptedExitCode) {
      ++preempted;
      continue;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      result->failed_rank = rank;
      LOG(ERROR) << "launcher: rank " << rank << " " << DescribeWaitStatus(status)
                 << "; stopping the other ranks";
      return RankFailed(rank, status, workers.StopAll(options.grace));
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
