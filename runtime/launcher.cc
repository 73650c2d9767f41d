#include "runtime/launcher.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "logging/glog.h"
#include "runtime/cpu_pinning.h"
#include "runtime/distributed_env.h"
#include "runtime/heartbeat.h"
#include "runtime/membership.h"
#include "runtime/mpirun_launcher.h"
#include "runtime/preemption.h"
#include "runtime/store_host.h"
#include "runtime/wait_status.h"

namespace receipt_parity {
namespace {

// `cpu` < 0: not pinned. `joins_after` >= 0: a replacement, joining after
// that membership.
pid_t StartWorker(const LaunchOptions& options, int rank, int cpu, int joins_after = -1) {
  DistributedEnv env;
  env.rank = rank;
  env.world_size = options.world_size;
  env.local_rank = rank;
  env.master_addr = options.master_addr;
  env.master_port = options.master_port;
  env.launcher_hosts_store = options.host_store;
  env.survivors_go_on = options.host_store && options.survivors_go_on;
  env.joins_after_membership = joins_after;
  if (options.host_store && options.heartbeat_timeout.count() > 0) {
    env.heartbeat_interval_ms =
        static_cast<int>(HeartbeatInterval(options.heartbeat_timeout).count());
  }
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

  // Which ranks are not yet reaped.
  std::vector<bool> Live() const {
    std::vector<bool> live(pids_.size());
    for (size_t r = 0; r < pids_.size(); ++r) live[r] = pids_[r] > 0;
    return live;
  }

  // A new process `pid` runs as `rank` (a replacement; the rank's last
  // was reaped).
  void Replace(int rank, pid_t pid) {
    pids_[rank] = pid;
    if (live_pids_ != nullptr) (*live_pids_)[rank].store(pid);
    ++running_;
  }

  // Kills `rank` (SIGKILL; a stopped process dies too); it is reaped as
  // any other.
  void Kill(int rank) {
    if (pids_[rank] > 0) kill(pids_[rank], SIGKILL);
  }

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

// Starts one worker per rank, on `cpus`; on a failed start none is left
// running.
absl::StatusOr<std::vector<pid_t>> StartWorkers(const LaunchOptions& options,
                                                const std::vector<int>& cpus) {
  std::vector<pid_t> pids(options.world_size, -1);
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

// The run's error after `rank` ended with `status` (`why`: how, said
// already), the others stopped.
absl::Status RankFailed(int rank, const std::string& why, const std::vector<int>& stopped) {
  std::string frozen;
  for (int r : stopped) {
    absl::StrAppend(&frozen, "; rank ", r,
                    " had stopped answering (it was stopped: state T, SIGSTOP or a "
                    "debugger) and was killed");
  }
  if (!frozen.empty()) LOG(ERROR) << "launcher: " << frozen.substr(2);
  return absl::AbortedError(
      absl::StrCat("rank ", rank, " ", why, frozen, "; stopped the other ranks"));
}

// What the launcher watches besides its children's exits: their
// heartbeats, over the store it hosts; nothing without a watch.
class RankWatch {
 public:
  RankWatch(const LaunchOptions& options, c10::intrusive_ptr<c10d::Store> store) {
    if (store && options.heartbeat_timeout.count() > 0) {
      heartbeats_.emplace(std::move(store), options.world_size, options.heartbeat_timeout);
    }
  }

  bool watching() const { return heartbeats_.has_value(); }

  // Kills every rank whose heartbeat stalled (they are reaped as losses).
  void KillFrozen(WorkerSet& workers) {
    for (int rank : heartbeats_->Frozen(workers.Live())) {
      LOG(ERROR) << "launcher: rank " << rank << " stopped answering: no heartbeat for "
                 << heartbeats_->SecondsSinceLastBeat(rank) << " s; killing it";
      frozen_seconds_[rank] = heartbeats_->SecondsSinceLastBeat(rank);
      workers.Kill(rank);
    }
  }

  // A replacement runs as `rank`: watched from its own first beat.
  void Restart(int rank) {
    frozen_seconds_.erase(rank);
    if (heartbeats_) heartbeats_->Restart(rank);
  }

  // The loss of `rank`, which ended with `status`.
  RankLoss Loss(int rank, int status) const {
    RankLoss loss;
    loss.rank = rank;
    loss.wait_status = status;
    if (auto frozen = frozen_seconds_.find(rank); frozen != frozen_seconds_.end()) {
      const double seconds = frozen->second;
      loss.why = absl::StrCat("stopped answering: no heartbeat for ",
                              absl::SixDigits(seconds), " s; killed");
      loss.detection_seconds = seconds;
    } else {
      loss.why = DescribeWaitStatus(status);
      if (heartbeats_) loss.detection_seconds = heartbeats_->SecondsSinceLastBeat(rank);
    }
    if (heartbeats_) loss.updates_completed = heartbeats_->UpdatesCompleted(rank);
    return loss;
  }

 private:
  std::optional<HeartbeatWatch> heartbeats_;
  // The ranks the watch killed, with their seconds without a heartbeat.
  std::map<int, double> frozen_seconds_;
};

// The next child that ended: blocking when `polls` is false; otherwise
// polling, and calling `between_polls` (kill the ranks whose heartbeats
// stall, admit ready replacements) meanwhile. -1 when there is no child
// left to wait for.
pid_t NextEnded(bool polls, const std::function<void()>& between_polls, int* status) {
  while (true) {
    const pid_t pid = waitpid(-1, status, polls ? WNOHANG : 0);
    if (pid > 0) return pid;
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) return -1;
    between_polls();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// With options.host_store, the store the launcher hosts; null otherwise.
absl::StatusOr<c10::intrusive_ptr<c10d::Store>> MaybeHostStore(const LaunchOptions& options) {
  if (!options.host_store) return c10::intrusive_ptr<c10d::Store>();
  absl::StatusOr<c10::intrusive_ptr<c10d::TCPStore>> store =
      HostStore(options.master_addr, options.master_port, std::chrono::seconds(5));
  if (!store.ok()) return store.status();
  LOG(INFO) << "launcher: hosting the store at " << options.master_addr << ":"
            << options.master_port
            << (options.heartbeat_timeout.count() > 0
                    ? absl::StrCat("; a rank without a heartbeat for ",
                                   options.heartbeat_timeout.count(), " ms is lost")
                    : std::string());
  return c10::intrusive_ptr<c10d::Store>(*std::move(store));
}

// Whether a rank that ended with `status` was lost (a signal: SIGKILL, a
// crash; or frozen and killed by the watch) rather than ending with a code
// of its own, which is the run's verdict.
bool IsLost(int status) {
  return WIFSIGNALED(status);
}

// The changes of membership a run with survivors_go_on went through.
class MembershipLog {
 public:
  MembershipLog(const LaunchOptions& options, c10::intrusive_ptr<c10d::Store> store)
      : store_(std::move(store)), enabled_(options.host_store && options.survivors_go_on) {
    for (int r = 0; r < options.world_size; ++r) members_.push_back(r);
  }

  int membership() const { return membership_; }
  const std::vector<int>& members() const { return members_; }

  // Whether `status` makes `rank` leave while the others go on (some
  // member is still running).
  bool GoesOn(int status, const WorkerSet& workers) const {
    if (!enabled_ || !IsLost(status)) return false;
    const std::vector<bool> live = workers.Live();
    return std::any_of(members_.begin(), members_.end(), [&](int r) { return live[r]; });
  }

  // Publishes the next membership (the members still running) with every
  // loss in `losses` from `first` on; Unavailable when it cannot.
  absl::Status Publish(const WorkerSet& workers, std::vector<RankLoss>& losses, size_t first) {
    ++membership_;
    std::vector<int> survivors;
    const std::vector<bool> live = workers.Live();
    for (int r : members_) {
      if (live[r]) survivors.push_back(r);
    }
    members_ = survivors;
    for (size_t i = first; i < losses.size(); ++i) {
      losses[i].membership = membership_;
      losses[i].survivors = survivors;
    }
    LOG(WARNING) << "launcher: membership " << membership_ << ": ranks "
                 << FormatMembership(survivors) << " go on";
    return PublishMembership(*store_, membership_, survivors);
  }

  // Whether every member of the newest membership (after a change) has
  // reported how it went.
  bool AllReported() const {
    if (membership_ == 0) return false;
    for (int r : members_) {
      if (!ValueIfPresent(*store_, ReformedKey(membership_, r)).has_value()) return false;
    }
    return true;
  }

  // Publishes the next membership: the members, then `joining`.
  absl::Status Grow(const std::vector<int>& joining) {
    ++membership_;
    members_.insert(members_.end(), joining.begin(), joining.end());
    LOG(WARNING) << "launcher: membership " << membership_ << ": ranks "
                 << FormatMembership(members_) << " (rank(s) " << FormatMembership(joining)
                 << " replaced) go on at the next update boundary";
    return PublishMembership(*store_, membership_, members_);
  }

  // The members' reports of each change, read into `losses` and `joins`.
  void ReadReports(std::vector<RankLoss>& losses, std::vector<RankJoin>& joins) const {
    for (RankLoss& loss : losses) {
      if (loss.membership == 0) continue;
      ReadInto(loss.membership, loss.survivors, &loss.reforming_seconds, &loss.updates_redone,
               &loss.went_on_from_update);
    }
    for (RankJoin& join : joins) {
      int redone = 0;
      ReadInto(join.membership, join.members, &join.reforming_seconds, &redone,
               &join.went_on_from_update);
    }
  }

 private:
  // The slowest report of `membership`'s `ranks`.
  void ReadInto(int membership, const std::vector<int>& ranks, double* seconds, int* redone,
                int64_t* from) const {
    for (int rank : ranks) {
      const std::optional<std::string> text =
          ValueIfPresent(*store_, ReformedKey(membership, rank));
      if (!text.has_value()) continue;
      const std::optional<ReformedReport> report = ParseReformed(*text);
      if (!report.has_value()) continue;
      *seconds = std::max(*seconds, report->reforming_seconds);
      *redone = std::max(*redone, report->updates_redone);
      *from = report->went_on_from_update;
    }
  }

  c10::intrusive_ptr<c10d::Store> store_;
  bool enabled_;
  int membership_ = 0;
  // The launch ranks of the newest membership, in group order.
  std::vector<int> members_;
};

// The replacements of lost ranks (LaunchOptions::replace_lost_ranks).
class Replacements {
 public:
  Replacements(const LaunchOptions& options, c10::intrusive_ptr<c10d::Store> store,
               std::vector<int> cpus)
      : options_(options), store_(std::move(store)), cpus_(std::move(cpus)) {}

  bool pending() const { return !pending_.empty(); }
  int pending_count() const { return static_cast<int>(pending_.size()); }
  bool IsPending(int rank) const { return pending_.count(rank) > 0; }

  // Starts a replacement for each of `lost` (reaped) that the limit
  // allows, to join after `membership`.
  void Start(const std::vector<int>& lost, int membership, WorkerSet& workers, RankWatch& watch) {
    if (!options_.replace_lost_ranks) return;
    for (int rank : lost) {
      if (started_ >= options_.max_replacements) {
        LOG(WARNING) << "launcher: rank " << rank << " is not replaced: run.max_replacements ("
                     << options_.max_replacements << ") are used up";
        continue;
      }
      watch.Restart(rank);
      const pid_t pid = StartWorker(options_, rank, cpus_[rank], membership);
      if (pid < 0) {
        LOG(ERROR) << "launcher: cannot start a replacement for rank " << rank << ": "
                   << std::strerror(errno);
        continue;
      }
      ++started_;
      workers.Replace(rank, pid);
      pending_[rank] = Pending{membership, std::chrono::steady_clock::now()};
      LOG(WARNING) << "launcher: started a replacement for rank " << rank << " (" << started_
                   << " of at most " << options_.max_replacements
                   << "); it joins at an update boundary once it is ready";
    }
  }

  // Whether `rank` is a replacement the launcher stopped because the
  // members finished before its group formed (its end is no loss).
  bool Unneeded(int rank) const { return unneeded_.count(rank) > 0; }

  // A member finished its run: a replacement taken into a membership that
  // has not formed yet never will (the members finished before their next
  // update boundary); it is stopped, and its join is not recorded.
  void MemberFinished(WorkerSet& workers, LaunchResult* result) {
    for (auto it = result->joins.begin(); it != result->joins.end();) {
      if (ValueIfPresent(*store_, ReformedKey(it->membership, it->rank)).has_value()) {
        ++it;
        continue;
      }
      LOG(WARNING) << "launcher: the members finished before the replacement for rank "
                   << it->rank << " joined; stopping it";
      unneeded_.insert(it->rank);
      workers.Kill(it->rank);
      it = result->joins.erase(it);
    }
  }

  // A pending replacement ended before it joined: said; the run goes on.
  void Ended(int rank, int status) {
    pending_.erase(rank);
    LOG(ERROR) << "launcher: the replacement for rank " << rank << " " << DescribeWaitStatus(status)
               << " before it joined; the others go on without it";
  }

  // When every member has reported the last change, publishes the next
  // membership with the replacements that are ready.
  void AdmitReady(MembershipLog& log, LaunchResult* result) {
    if (pending_.empty() || !log.AllReported()) return;
    std::vector<int> ready;
    for (const auto& [rank, pending] : pending_) {
      if (ValueIfPresent(*store_, JoiningKey(pending.joins_after, rank)).has_value()) {
        ready.push_back(rank);
      }
    }
    if (ready.empty()) return;
    if (absl::Status s = log.Grow(ready); !s.ok()) {
      LOG(ERROR) << "launcher: " << s.message();
      return;
    }
    for (int rank : ready) {
      RankJoin join;
      join.rank = rank;
      join.membership = log.membership();
      join.members = log.members();
      join.joining_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                           pending_[rank].started)
                                 .count();
      result->joins.push_back(join);
      pending_.erase(rank);
    }
  }

 private:
  struct Pending {
    int joins_after = 0;
    std::chrono::steady_clock::time_point started;
  };

  const LaunchOptions& options_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::vector<int> cpus_;
  std::map<int, Pending> pending_;
  std::set<int> unneeded_;
  int started_ = 0;
};

// How long after a lost rank the launcher waits for others to end before
// it publishes the next membership: ranks killed together (a host, a
// scheduler's sweep) leave in one change, instead of the survivors forming
// a group whose member is already dead.
constexpr std::chrono::milliseconds kLeaveTogetherWindow{50};

// Reaps every worker that ends within kLeaveTogetherWindow: the lost
// members are losses, the others' (rank, status) go to `ended` for the
// loop.
void ReapLostTogether(WorkerSet& workers, const RankWatch& watch,
                      const Replacements& replacements, LaunchResult* result,
                      std::deque<std::pair<int, int>>* ended) {
  const auto until = std::chrono::steady_clock::now() + kLeaveTogetherWindow;
  while (workers.running() > 0 && std::chrono::steady_clock::now() < until) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    const int rank = workers.Reaped(pid, status);
    if (rank < 0) continue;
    if (IsLost(status) && !replacements.IsPending(rank)) {
      result->losses.push_back(watch.Loss(rank, status));
    } else {
      ended->emplace_back(rank, status);
    }
  }
}

// After the loss just recorded last in `result`: the members lost with
// it are reaped, the next membership published without them, and their
// replacements started. False when no member is left running or the
// membership cannot be published (the run then stops).
bool WentOnWithout(int status, WorkerSet& workers, RankWatch& watch, MembershipLog& memberships,
                   Replacements& replacements, LaunchResult* result,
                   std::deque<std::pair<int, int>>* ended) {
  const size_t first = result->losses.size() - 1;
  ReapLostTogether(workers, watch, replacements, result, ended);
  if (!memberships.GoesOn(status, workers) ||
      !memberships.Publish(workers, result->losses, first).ok()) {
    return false;
  }
  std::vector<int> lost;
  for (size_t i = first; i < result->losses.size(); ++i) {
    LOG(ERROR) << "launcher: rank " << result->losses[i].rank << " " << result->losses[i].why
               << "; the others go on without it";
    lost.push_back(result->losses[i].rank);
  }
  replacements.Start(lost, memberships.membership(), workers, watch);
  return true;
}

}  // namespace

absl::Status LaunchLocalWorkers(const LaunchOptions& options,
                                LaunchResult* result) {
  if (options.under_mpirun) return LaunchUnderMpirun(options, result);
  result->wait_status.assign(options.world_size, 0);
  result->failed_rank = -1;
  result->losses.clear();
  result->joins.clear();
  absl::StatusOr<c10::intrusive_ptr<c10d::Store>> store = MaybeHostStore(options);
  if (!store.ok()) return store.status();
  const std::vector<int> cpus = RankCpus(options);
  absl::StatusOr<std::vector<pid_t>> pids = StartWorkers(options, cpus);
  if (!pids.ok()) return pids.status();
  WorkerSet workers(*std::move(pids), result);
  RankWatch watch(options, *store);
  MembershipLog memberships(options, *store);
  Replacements replacements(options, *store, cpus);
  if (options.forward_preemption_signals) workers.ForwardPreemptionSignals();
  const auto between_polls = [&] {
    if (watch.watching()) watch.KillFrozen(workers);
    replacements.AdmitReady(memberships, result);
  };
  int preempted = 0;
  std::deque<std::pair<int, int>> ended;  // reaped, not yet handled
  while (workers.running() > replacements.pending_count() || !ended.empty()) {
    int status = 0;
    int rank = -1;
    if (!ended.empty()) {
      std::tie(rank, status) = ended.front();
      ended.pop_front();
    } else {
      const pid_t pid =
          NextEnded(watch.watching() || replacements.pending(), between_polls, &status);
      if (pid < 0) break;
      rank = workers.Reaped(pid, status);
      if (rank < 0) continue;
    }
    if (replacements.IsPending(rank)) {
      replacements.Ended(rank, status);
      continue;
    }
    if (replacements.Unneeded(rank)) continue;
    if (WIFEXITED(status) && WEXITSTATUS(status) == kPreemptedExitCode) {
      ++preempted;
      continue;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      replacements.MemberFinished(workers, result);
      continue;
    }
    const RankLoss loss = watch.Loss(rank, status);
    result->losses.push_back(loss);
    if (memberships.GoesOn(status, workers) &&
        WentOnWithout(status, workers, watch, memberships, replacements, result, &ended)) {
      continue;
    }
    result->failed_rank = rank;
    LOG(ERROR) << "launcher: rank " << rank << " " << loss.why << "; stopping the other ranks";
    memberships.ReadReports(result->losses, result->joins);
    return RankFailed(rank, loss.why, workers.StopAll(options.grace));
  }
  if (replacements.pending()) {
    LOG(WARNING) << "launcher: every member finished; stopping the replacement(s) still "
                    "waiting to join";
    workers.StopAll(options.grace);
  }
  memberships.ReadReports(result->losses, result->joins);
  if (preempted > 0) {
    return absl::AbortedError(absl::StrCat(
        preempted, " of ", options.world_size,
        " ranks were preempted (SIGTERM or SIGUSR1) and stopped at an update boundary; run "
        "the same command again to resume"));
  }
  return absl::OkStatus();
}

}  // namespace receipt_parity
