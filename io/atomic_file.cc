#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace receipt_parity {
namespace {

absl::Status ErrnoError(const std::string& what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

}  // namespace

absl::Status SyncDirectory(const std::string& dir) {
  int fd = open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return ErrnoError("cannot open folder", dir);
  int rc = fsync(fd);
  close(fd);
  if (rc != 0) return ErrnoError("cannot fsync folder", dir);
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& contents) {
  const std::string tmp = absl::StrCat(path, ".tmp-", getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", tmp);
  const char* data = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t n = write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status error = ErrnoError("cannot write", tmp);
      close(fd);
      unlink(tmp.c_str());
      return error;
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) {
    absl::Status error = ErrnoError("cannot fsync", tmp);
    close(fd);
    unlink(tmp.c_str());
    return error;
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    absl::Status error = ErrnoError("cannot rename onto", path);
    unlink(tmp.c_str());
    return error;
  }
  return SyncDirectory(std::filesystem::path(path).parent_path().string());
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
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace receipt_parity
