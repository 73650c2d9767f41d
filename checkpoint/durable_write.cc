#include "checkpoint/durable_write.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "checkpoint/generation_layout.h"
#include "io/atomic_file.h"

namespace receipt_parity {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

// Writes all of `bytes` to `fd` and fsyncs it.
absl::Status WriteAndSync(int fd, absl::string_view bytes,
                          const std::string& path) {
  while (!bytes.empty()) {
    ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot write", path);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  if (fsync(fd) != 0) return ErrnoError("cannot fsync", path);
  return absl::OkStatus();
}

// Opens, fills and closes the temp file; the caller removes it on error.
absl::Status WriteTemp(const std::string& tmp, absl::string_view bytes,
                       const WriteHooks& hooks) {
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", tmp);
  const size_t half = bytes.size() / 2;
  absl::Status status = WriteAndSync(fd, bytes.substr(0, half), tmp);
  if (status.ok() && hooks.after_half) hooks.after_half();
  if (status.ok()) status = WriteAndSync(fd, bytes.substr(half), tmp);
  if (close(fd) != 0 && status.ok()) status = ErrnoError("cannot close", tmp);
  return status;
}

}  // namespace

absl::Status WriteFileDurably(const std::string& path, absl::string_view bytes,
                              const WriteHooks& hooks) {
  const std::string tmp = TempPathFor(path);
  absl::Status status = WriteTemp(tmp, bytes, hooks);
  if (status.ok() && hooks.before_rename) hooks.before_rename();
  if (status.ok() && rename(tmp.c_str(), path.c_str()) != 0) {
    status = ErrnoError("cannot rename onto", path);
  }
  if (!status.ok()) {
    unlink(tmp.c_str());
    return status;
  }
  return SyncDirectory(std::filesystem::path(path).parent_path().string());
}

}  // namespace receipt_parity
