#include "runtime/store_host.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"

namespace receipt_parity {

absl::StatusOr<TcpAddresses> ResolveTcpAddress(const std::string& address, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int resolved =
      getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (resolved != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("MASTER_ADDR=", address, " does not resolve: ", gai_strerror(resolved)));
  }
  return TcpAddresses(found, &freeaddrinfo);
}

absl::StatusOr<int> ListenOnAddress(const std::string& address, int port) {
  absl::StatusOr<TcpAddresses> found = ResolveTcpAddress(address, port);
  if (!found.ok()) return found.status();
  int fd = -1;
  std::string why = "no address";
  for (addrinfo* a = found->get(); a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      why = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address, ":", port, ": ", why));
  }
  return fd;
}

absl::StatusOr<c10::intrusive_ptr<c10d::TCPStore>> HostStore(const std::string& address,
                                                             int port,
                                                             std::chrono::milliseconds timeout) {
  absl::StatusOr<int> listening = ListenOnAddress(address, port);
  if (!listening.ok()) return listening.status();
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(port);
  options.isServer = true;
  options.waitWorkers = false;
  options.masterListenFd = *listening;
  options.timeout = timeout;
  try {
    return c10::make_intrusive<c10d::TCPStore>(address, options);
  } catch (const std::exception& e) {
    close(*listening);
    return absl::InternalError(
        absl::StrCat("cannot host the store at ", address, ":", port, ": ", e.what()));
  }
}

absl::StatusOr<c10::intrusive_ptr<c10d::TCPStore>> ConnectToStore(
    const std::string& address, int port, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(port);
  options.isServer = false;
  options.waitWorkers = false;
  options.timeout = timeout;
  try {
    return c10::make_intrusive<c10d::TCPStore>(address, options);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("cannot reach the store at ", address, ":", port, ": ", e.what()));
  }
}

std::optional<std::string> ValueIfPresent(c10d::Store& store, const std::string& key) {
  try {
    if (!store.check({key})) return std::nullopt;
    const std::vector<uint8_t> bytes = store.get(key);
    return std::string(bytes.begin(), bytes.end());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace receipt_parity
