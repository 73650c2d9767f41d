#include "io/run_folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <random>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

std::string LockPath(const std::string& dir) {
  return (fs::absolute(dir).lexically_normal() / "LOCK").string();
}

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

std::string RunId() {
  std::random_device device;
  return absl::StrFormat("%08x%08x", device(), device());
}

std::string ReadHolder(int fd) {
  char buffer[512] = {};
  const ssize_t n = pread(fd, buffer, sizeof(buffer) - 1, 0);
  if (n <= 0) return "holder unknown";
  return std::string(absl::StripTrailingAsciiWhitespace(std::string(buffer, n)));
}

absl::Status WriteHolder(int fd, const std::string& holder) {
  const std::string line = holder + "\n";
  if (ftruncate(fd, 0) != 0 ||
      pwrite(fd, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size()) ||
      fsync(fd) != 0) {
    return absl::InternalError(absl::StrCat("cannot write the lock file: ",
                                            std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

RunFolderLock::RunFolderLock(RunFolderLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      holder_(std::move(other.holder_)),
      created_dir_(std::exchange(other.created_dir_, false)) {}

RunFolderLock& RunFolderLock::operator=(RunFolderLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    holder_ = std::move(other.holder_);
    created_dir_ = std::exchange(other.created_dir_, false);
  }
  return *this;
}

RunFolderLock::~RunFolderLock() {
  if (fd_ < 0) return;
  const fs::path dir = fs::path(path_).parent_path();
  std::error_code ec;
  const bool only_the_lock =
      created_dir_ && std::distance(fs::directory_iterator(dir, ec), fs::directory_iterator()) == 1;
  if (only_the_lock && !ec) unlink(path_.c_str());  // still holding the lock
  close(fd_);
  if (only_the_lock && !ec) fs::remove(dir, ec);  // only if still empty
}

absl::StatusOr<RunFolderLock> RunFolderLock::Acquire(const std::string& dir) {
  std::error_code ec;
  const bool created_dir = fs::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create the run folder ", dir, ": ", ec.message()));
  }
  const std::string path = LockPath(dir);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot open the lock file ", path, ": ", std::strerror(errno)));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string holder = ReadHolder(fd);
    close(fd);
    if (error == EWOULDBLOCK) {
      return absl::AlreadyExistsError(absl::StrCat(
          dir, " is in use by another run (", holder, ", ", path,
          "); wait for it to end or use another --out"));
    }
    return absl::InternalError(
        absl::StrCat("cannot lock ", path, ": ", std::strerror(error)));
  }
  const std::string holder =
      absl::StrCat("host=", Hostname(), " pid=", getpid(), " run_id=", RunId());
  if (absl::Status s = WriteHolder(fd, holder); !s.ok()) {
    close(fd);
    return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
  }
  return RunFolderLock(fd, path, holder, created_dir);
}

bool ParentHoldsRunFolderLock(const std::string& dir) {
  const char* held = std::getenv(kRunLockHeldEnv);
  return held != nullptr &&
         std::string(held) == absl::StrCat(LockPath(dir), ":", getppid());
}

}  // namespace receipt_parity
