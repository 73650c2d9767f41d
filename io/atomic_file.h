// Files that are either wholly there or not there at all.
//
// WriteFileAtomically writes `path.tmp-<pid>`, fsyncs it, renames it over
// `path` and fsyncs the folder, so a reader (or a restart after a crash)
// sees the old contents or the new ones, never a torn file.
#ifndef RECEIPT_PARITY_IO_ATOMIC_FILE_H_
#define RECEIPT_PARITY_IO_ATOMIC_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace receipt_parity {

// Errors name the path and carry strerror's text. On error the temporary
// file is removed and `path` is untouched.
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& contents);

// fsync of a folder, so a rename or unlink inside it is durable.
absl::Status SyncDirectory(const std::string& dir);

// The whole file. NotFound if it does not exist.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_IO_ATOMIC_FILE_H_
