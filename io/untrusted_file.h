// Reading a file that a run trusts only after checking it (a checkpoint's
// MANIFEST and shards): the checks come before the file is opened, and
// nothing is allocated for more than the file may hold.
//
// Thread safety: pure functions over the file system.
#ifndef RECEIPT_PARITY_IO_UNTRUSTED_FILE_H_
#define RECEIPT_PARITY_IO_UNTRUSTED_FILE_H_

#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/status/statusor.h"

namespace receipt_parity {

// What a path that exists but is not a regular file is, for messages: "a
// folder", "a FIFO", "a character device", "a block device", "a socket",
// "not a file".
const char* NonRegularKind(std::filesystem::file_type type);

// How ReadUntrustedFile may read a file.
struct UntrustedFileRules {
  // The file, links resolved, must lie inside this folder (links resolved
  // too); empty: anywhere.
  std::string within;
  // The size the file must have (-1: any size up to max_bytes), and what
  // says so, for messages ("size 7 != manifest 9").
  int64_t exact_bytes = -1;
  std::string exact_bytes_source = "expected";
  // The most it may hold when exact_bytes is -1.
  int64_t max_bytes = int64_t{64} << 20;
};

// The bytes of `path`, after checking, before opening it, that it is a
// regular file (following links: a FIFO would block, a device read without
// end), that it resolves inside rules.within, and that its size is
// rules.exact_bytes or at most rules.max_bytes; then it is opened without
// blocking and read up to that size, and must hold exactly it. Errors name
// the path: NotFound when missing; FailedPrecondition for a link leaving
// rules.within or a file that is not regular ("... is a FIFO, not a
// regular file"); DataLoss for a size other than expected or over the
// bound, or a file that changed while read; Internal for I/O errors.
absl::StatusOr<std::string> ReadUntrustedFile(const std::string& path,
                                              const UntrustedFileRules& rules);

// `path` (links resolved) lies inside `folder` (links resolved): false for
// a link whose target leaves it, and for a path that cannot be resolved.
bool ResolvesInside(const std::string& path, const std::string& folder);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_IO_UNTRUSTED_FILE_H_
