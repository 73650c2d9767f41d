// Writing one checkpoint file so that a crash leaves either nothing at its
// final name or the whole file: temp name, fsync, rename, fsync of the
// folder. Unlike io/atomic_file.h, the two moments where a save can be
// interrupted are exposed as hooks, so fault injection can kill the process
// there (checkpoint/fault_injection.h).
#ifndef RECEIPT_PARITY_CHECKPOINT_DURABLE_WRITE_H_
#define RECEIPT_PARITY_CHECKPOINT_DURABLE_WRITE_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace receipt_parity {

struct WriteHooks {
  // Called once the first half of the bytes (size / 2) is written to the
  // temp file and fsynced.
  std::function<void()> after_half;
  // Called once all bytes are in the temp file and fsynced, before the
  // rename.
  std::function<void()> before_rename;
};

// Writes `bytes` to TempPathFor(path), fsyncs it, renames it to `path` and
// fsyncs the folder of `path`. An existing file at `path` is replaced.
// Errors (Internal) name the file and carry strerror's text; on error the
// temp file is removed and `path` is left as it was.
absl::Status WriteFileDurably(const std::string& path, absl::string_view bytes,
                              const WriteHooks& hooks = {});

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CHECKPOINT_DURABLE_WRITE_H_
