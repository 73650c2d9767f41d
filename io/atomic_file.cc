#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace receipt_parity {
namespace {

constexpr absl::string_view kTempInfix = ".tmp-";

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

// Writes all of `bytes` to `fd`.
absl::Status WriteAll(int fd, absl::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot write", path);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// Writes all of `bytes` to `fd` and fsyncs it.
absl::Status WriteAndSync(int fd, absl::string_view bytes,
                          const std::string& path) {
  if (absl::Status s = WriteAll(fd, bytes, path); !s.ok()) return s;
  if (fsync(fd) != 0) return ErrnoError("cannot fsync", path);
  return absl::OkStatus();
}

// Renames the filled temp file onto `path` and syncs its folder; on an
// error before, removes the temp file.
absl::Status Publish(const std::string& tmp, const std::string& path,
                     absl::Status status, const WriteHooks& hooks) {
  if (status.ok() && hooks.before_rename) hooks.before_rename();
  if (status.ok() && rename(tmp.c_str(), path.c_str()) != 0) {
    status = ErrnoError("cannot rename onto", path);
  }
  if (!status.ok()) {
    unlink(tmp.c_str());
    return status;
  }
  if (!hooks.sync_folder) return absl::OkStatus();
  return SyncDirectory(std::filesystem::path(path).parent_path().string());
}

// Opens, fills and closes the temp file; the caller removes it on error.
absl::Status WriteTemp(const std::string& tmp, absl::string_view bytes,
                       const WriteHooks& hooks) {
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", tmp);
  // Without a hook at the half, nothing needs the half on disk first.
  const size_t half = hooks.after_half ? bytes.size() / 2 : 0;
  absl::Status status = absl::OkStatus();
  if (hooks.after_half) status = WriteAndSync(fd, bytes.substr(0, half), tmp);
  if (status.ok() && hooks.after_half) hooks.after_half();
  if (status.ok()) status = WriteAndSync(fd, bytes.substr(half), tmp);
  if (close(fd) != 0 && status.ok()) status = ErrnoError("cannot close", tmp);
  return status;
}

}  // namespace

std::string TempPathFor(const std::string& final_path) {
  return absl::StrCat(final_path, kTempInfix, getpid());
}

bool IsTempFileName(absl::string_view name) {
  return absl::StrContains(name, kTempInfix);
}

absl::Status SyncDirectory(const std::string& dir) {
  int fd = open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return ErrnoError("cannot open folder", dir);
  int rc = fsync(fd);
  close(fd);
  if (rc != 0) return ErrnoError("cannot fsync folder", dir);
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view contents,
                                 const WriteHooks& hooks) {
  const std::string tmp = TempPathFor(path);
  return Publish(tmp, path, WriteTemp(tmp, contents, hooks), hooks);
}

absl::Status WriteFileAtomicallyFrom(
    const std::string& path,
    const std::function<absl::Status(const ByteSink&)>& produce) {
  const std::string tmp = TempPathFor(path);
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", tmp);
  absl::Status status = produce(
      [fd, &tmp](absl::string_view bytes) { return WriteAll(fd, bytes, tmp); });
  if (status.ok() && fsync(fd) != 0) status = ErrnoError("cannot fsync", tmp);
  if (close(fd) != 0 && status.ok()) status = ErrnoError("cannot close", tmp);
  return Publish(tmp, path, std::move(status), WriteHooks{});
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    }
    return ErrnoError("cannot read", path);
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": a folder, not a file"));
  }
  // Reserved at the file's size: a growing stream buffer, copied at the end,
  // would hold three times the file at its peak. /proc files and pipes
  // report no size and are read as they come.
  std::string text;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size > 0) text.reserve(static_cast<size_t>(size));
  in.clear();
  in.seekg(0, std::ios::beg);
  in.clear();
  char chunk[1 << 16];
  while (in.read(chunk, sizeof(chunk)), in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return ErrnoError("cannot read", path);
  return text;
}

}  // namespace receipt_parity
