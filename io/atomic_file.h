// Files that are either wholly there or not there at all.
//
// WriteFileAtomically is the project's one durable-write routine: it writes
// TempPathFor(path), fsyncs it, renames it over `path` and fsyncs the
// folder, so a reader (or a restart after a crash) sees the old contents or
// the new ones, never a torn file. Checkpoint shards and MANIFESTs use it
// with hooks at the two moments a save can be interrupted, so fault
// injection can kill the process there (checkpoint/fault_injection.h).
#ifndef RECEIPT_PARITY_IO_ATOMIC_FILE_H_
#define RECEIPT_PARITY_IO_ATOMIC_FILE_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace receipt_parity {

struct WriteHooks {
  // Called once the first half of the bytes (size / 2) is written to the
  // temp file and fsynced. Set, it costs one more fsync (the half's); unset,
  // the temp file is written and fsynced once.
  std::function<void()> after_half;
  // Called once all bytes are in the temp file and fsynced, before the
  // rename.
  std::function<void()> before_rename;
  // false: the folder of `path` is not fsynced after the rename; the
  // caller fsyncs it (SyncDirectory) before anything depends on the new
  // name being durable, e.g. once for several files renamed into one
  // folder. The contents are durable either way.
  bool sync_folder = true;
};

// FINAL.tmp-PID for the calling process: where WriteFileAtomically stages
// `final_path`.
std::string TempPathFor(const std::string& final_path);

// True for names made by TempPathFor.
bool IsTempFileName(absl::string_view name);

// Writes `contents` to TempPathFor(path), fsyncs it, renames it to `path`
// and fsyncs the folder of `path` (unless hooks.sync_folder is false). An existing file at `path` is replaced.
// Errors (Internal) name the path and carry strerror's text; on error the
// temporary file is removed and `path` is left as it was.
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view contents,
                                 const WriteHooks& hooks = {});

// Receives the bytes of a file in order; an error stops the writing.
using ByteSink = std::function<absl::Status(absl::string_view)>;

// WriteFileAtomically for contents made piece by piece: `produce` passes
// them to the sink it is given, in order, and they go to the temp file as
// they come (so a long file is never whole in memory). An error from
// `produce`, or one of the writes, is returned, the temporary file removed
// and `path` left as it was.
absl::Status WriteFileAtomicallyFrom(
    const std::string& path,
    const std::function<absl::Status(const ByteSink&)>& produce);

// fsync of a folder, so a rename or unlink inside it is durable.
absl::Status SyncDirectory(const std::string& dir);

// The whole file (a regular file, a /proc file or a pipe). NotFound if it
// does not exist, FailedPrecondition for a folder.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_IO_ATOMIC_FILE_H_
