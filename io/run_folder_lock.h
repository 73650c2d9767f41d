// One run owns its run folder (docs/design.md, "Run folders").
//
// The run's first process (the local launcher, a one-worker run, or rank 0
// under another launcher) takes DIR/LOCK, an exclusive flock(2), before it
// reads, cleans or writes anything in DIR, and holds it until it exits.
// The file names the holder: "host=H pid=P run_id=R". The kernel drops the
// lock when its holder dies however it dies, so a LOCK left behind never
// blocks; a live holder makes a second run fail at start, touching nothing
// but the LOCK file's existence (it is created when missing, never
// truncated by a run that did not get the lock).
// flock is per host: ranks on several hosts share one folder only through
// rank 0 (the only rank that locks).
#ifndef RECEIPT_PARITY_IO_RUN_FOLDER_LOCK_H_
#define RECEIPT_PARITY_IO_RUN_FOLDER_LOCK_H_

#include <string>

#include "absl/status/statusor.h"

namespace receipt_parity {

// The environment variable through which the local launcher tells the
// ranks it starts that it holds the lock: "<LOCK path>:<launcher pid>".
inline constexpr char kRunLockHeldEnv[] = "RECEIPT_PARITY_RUN_LOCK";

class RunFolderLock {
 public:
  RunFolderLock(RunFolderLock&& other) noexcept;
  RunFolderLock& operator=(RunFolderLock&& other) noexcept;
  RunFolderLock(const RunFolderLock&) = delete;
  RunFolderLock& operator=(const RunFolderLock&) = delete;
  // Releases the lock; the LOCK file stays, unless this lock created DIR
  // and nothing but LOCK is in it (a run refused before it wrote anything
  // leaves no folder behind).
  ~RunFolderLock();

  const std::string& path() const { return path_; }
  // What the LOCK file says of this holder.
  const std::string& holder() const { return holder_; }

  // Creates DIR when missing and takes DIR/LOCK without waiting. Errors:
  // AlreadyExists "DIR is in use by another run (host H pid P run_id R,
  // DIR/LOCK); wait for it to end or use another --out" while a live
  // process holds it; Internal naming the path when DIR or the file cannot
  // be made.
  static absl::StatusOr<RunFolderLock> Acquire(const std::string& dir);

 private:
  RunFolderLock(int fd, std::string path, std::string holder, bool created_dir)
      : fd_(fd), path_(std::move(path)), holder_(std::move(holder)),
        created_dir_(created_dir) {}

  int fd_ = -1;
  std::string path_;
  std::string holder_;
  bool created_dir_ = false;
};

// Whether this process is a rank started by the local launcher that holds
// DIR's lock (kRunLockHeldEnv names DIR/LOCK and this process's parent).
bool ParentHoldsRunFolderLock(const std::string& dir);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_IO_RUN_FOLDER_LOCK_H_
