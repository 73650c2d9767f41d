#include "runtime/call_deadline.h"

#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace receipt_parity {
namespace {

using Clock = std::chrono::steady_clock;

struct Pending {
  Clock::time_point deadline;
  std::string what;
  std::chrono::milliseconds limit;
};

// The deadlines held now, and the thread that watches them. Never
// destroyed (a process may end while a deadline is held).
class Watchdog {
 public:
  static Watchdog& Get() {
    static Watchdog* watchdog = new Watchdog();
    return *watchdog;
  }

  uint64_t Add(std::chrono::milliseconds limit, std::string what) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t id = next_id_++;
    pending_.emplace(id, Pending{Clock::now() + limit, std::move(what), limit});
    if (!started_) {
      started_ = true;
      std::thread([this] { Watch(); }).detach();
    }
    changed_.notify_one();
    return id;
  }

  void Remove(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.erase(id);
  }

 private:
  Watchdog() = default;

  [[noreturn]] static void EndProcess(const Pending& expired) {
    std::fprintf(stderr,
                 "error: %s did not return within %lld s, so it never will (a peer or the "
                 "store's host stopped answering: frozen, stopped or cut off); this rank gives "
                 "up, exit %d\n",
                 expired.what.c_str(),
                 static_cast<long long>(expired.limit.count() / 1000), kDeadlineExitCode);
    std::fflush(stderr);
    std::fflush(stdout);
    _exit(kDeadlineExitCode);
  }

  void Watch() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (pending_.empty()) {
        changed_.wait(lock);
        continue;
      }
      auto earliest = pending_.begin();
      for (auto it = pending_.begin(); it != pending_.end(); ++it) {
        if (it->second.deadline < earliest->second.deadline) earliest = it;
      }
      if (Clock::now() >= earliest->second.deadline) EndProcess(earliest->second);
      changed_.wait_until(lock, earliest->second.deadline);
    }
  }

  std::mutex mu_;
  std::condition_variable changed_;
  std::map<uint64_t, Pending> pending_;
  uint64_t next_id_ = 1;
  bool started_ = false;
};

}  // namespace

CallDeadline::CallDeadline(std::chrono::milliseconds limit, std::string what)
    : id_(Watchdog::Get().Add(limit, std::move(what))) {}

CallDeadline::~CallDeadline() { Watchdog::Get().Remove(id_); }

}  // namespace receipt_parity
