#include "io/untrusted_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

// Closes a descriptor when it goes.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// The size the file may be read at, checked against the rules.
absl::StatusOr<int64_t> CheckedSize(const std::string& path, int64_t size,
                                    const UntrustedFileRules& rules) {
  if (rules.exact_bytes >= 0 && size != rules.exact_bytes) {
    return absl::DataLossError(
        absl::StrCat(path, ": size ", size, " != ", rules.exact_bytes_source, " ",
                     rules.exact_bytes));
  }
  if (rules.exact_bytes < 0 && size > rules.max_bytes) {
    return absl::DataLossError(absl::StrCat(path, ": size ", size,
                                            " is over the bound of ", rules.max_bytes,
                                            " bytes for this file"));
  }
  return size;
}

}  // namespace

const char* NonRegularKind(fs::file_type type) {
  switch (type) {
    case fs::file_type::directory:
      return "a folder";
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a file";
  }
}

bool ResolvesInside(const std::string& path, const std::string& folder) {
  std::error_code ec;
  const fs::path target = fs::canonical(path, ec);
  if (ec) return false;
  const fs::path root = fs::canonical(folder, ec);
  if (ec) return false;
  auto [root_end, target_it] =
      std::mismatch(root.begin(), root.end(), target.begin(), target.end());
  return root_end == root.end();
}

absl::StatusOr<std::string> ReadUntrustedFile(const std::string& path,
                                              const UntrustedFileRules& rules) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  if (ec) return absl::InternalError(absl::StrCat("cannot stat ", path, ": ", ec.message()));
  if (!rules.within.empty() && !ResolvesInside(path, rules.within)) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": a link leading out of ", rules.within, " (to ",
        fs::weakly_canonical(path, ec).string(), "); nothing outside it is trusted"));
  }
  if (status.type() != fs::file_type::regular) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is ", NonRegularKind(status.type()), ", not a regular file"));
  }
  const uintmax_t listed = fs::file_size(path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot stat ", path, ": ", ec.message()));
  absl::StatusOr<int64_t> size = CheckedSize(path, static_cast<int64_t>(listed), rules);
  if (!size.ok()) return size.status();
  // Without blocking: had the file become a FIFO since, open would wait.
  const Descriptor fd(open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return Errno("cannot open", path);
  struct stat opened;
  if (fstat(fd.get(), &opened) != 0) return Errno("cannot stat", path);
  if (!S_ISREG(opened.st_mode) || opened.st_size != *size) {
    return absl::DataLossError(absl::StrCat(path, ": changed while it was read"));
  }
  std::string bytes(static_cast<size_t>(*size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("cannot read", path);
    if (n == 0) {
      return absl::DataLossError(absl::StrCat(path, ": ended after ", done, " of its ",
                                              *size, " bytes"));
    }
    done += static_cast<size_t>(n);
  }
  return bytes;
}

}  // namespace receipt_parity
