#include "runtime/process_group.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "collectives/collective_error.h"
#include "collectives/gloo_process_group.h"
#include "runtime/call_deadline.h"
#include "runtime/guarded_store.h"
#include "runtime/heartbeat.h"
#include "runtime/mpi_backend.h"
#include "runtime/store_host.h"

namespace receipt_parity {
namespace {

std::shared_ptr<::gloo::transport::Device> GlooDevice(
    const DistributedEnv& env) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
      ifname != nullptr && *ifname != '\0') {
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  }
  if (env.master_addr == "127.0.0.1" || env.master_addr == "localhost") {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

using Clock = std::chrono::steady_clock;

// Whether a TCP connection to MASTER_ADDR:MASTER_PORT succeeds within
// `limit`.
bool Connects(const DistributedEnv& env, std::chrono::milliseconds limit) {
  absl::StatusOr<TcpAddresses> found = ResolveTcpAddress(env.master_addr, env.master_port);
  if (!found.ok()) return false;
  bool connected = false;
  for (addrinfo* a = found->get(); a != nullptr && !connected; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                          a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      connected = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int error = 0;
      socklen_t length = sizeof(error);
      connected = poll(&p, 1, static_cast<int>(limit.count())) == 1 &&
                  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 &&
                  error == 0;
    }
    close(fd);
  }
  return connected;
}

// A rank that is not the store's host waits here, within `deadline`, for
// the store to listen: c10d's TCPStore client retries its connection past
// its timeout (about twice it in 2.11), so the wait is the project's.
absl::Status WaitForStore(const DistributedEnv& env, Clock::time_point deadline) {
  while (!Connects(env, std::chrono::milliseconds(200))) {
    if (Clock::now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "no store listens at ", env.master_addr, ":", env.master_port));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return absl::OkStatus();
}

// Every key of a run lives under its attempt's prefix: torchrun's agent
// keeps its store across elastic restarts, and a restarted rank must never
// read an earlier attempt's keys (Gloo's addresses, the start agreement,
// the resume decision, shard confirmations).
std::string AttemptKeyPrefix() {
  return absl::StrCat("attempt-", ElasticRestartCount());
}

std::chrono::milliseconds Remaining(Clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - Clock::now()));
}

absl::Status JoinFailed(const DistributedEnv& env, absl::string_view why) {
  return absl::DeadlineExceededError(absl::StrCat(
      "rank ", env.rank, ": cannot join the process group at ", env.master_addr,
      ":", env.master_port, " (world size ", env.world_size, "): ", why));
}

// c10d's TCPStore client pings the store in its constructor and reads the
// answer with no timeout: a store's host frozen there would block this
// rank for ever, so the construction is under a deadline of the options'
// timeout and the store's margin (runtime/call_deadline.h).
c10::intrusive_ptr<c10d::TCPStore> JoinStore(const DistributedEnv& env,
                                             const c10d::TCPStoreOptions& options) {
  const CallDeadline joining(
      std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout) +
          std::chrono::milliseconds(kStoreDeadlineMargin),
      absl::StrCat("rank ", env.rank, ": joining the store at ", env.master_addr, ":",
                   env.master_port));
  return c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
}

// A write to a socket whose peer died (Gloo writes with writev, which
// raises SIGPIPE) must be that call's error, not this process's death by
// SIGPIPE: the rank then reports the lost peer, or goes on without it.
void IgnoreBrokenPipes() {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, nullptr);
}

}  // namespace

absl::StatusOr<ProcessGroupHandle> ConnectProcessGroup(
    const DistributedEnv& env, std::chrono::seconds timeout,
    const CudaSupport* nccl, bool gradients_over_mpi) {
  IgnoreBrokenPipes();
  const Clock::time_point deadline = Clock::now() + timeout;
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(env.master_port);
    // Under torchrun the elastic agent already hosts the store (as
    // PyTorch's env:// rendezvous honours too).
    const char* agent_store = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
    const bool agent_hosts_store =
        agent_store != nullptr && std::string(agent_store) == "True";
    options.isServer = env.rank == 0 && !agent_hosts_store && !env.launcher_hosts_store;
    options.numWorkers = env.world_size;
    options.waitWorkers = true;
    if (options.isServer) {
      absl::StatusOr<int> listening = ListenOnAddress(env.master_addr, env.master_port);
      if (!listening.ok()) return JoinFailed(env, listening.status().message());
      options.masterListenFd = *listening;
    } else if (absl::Status s = WaitForStore(env, deadline); !s.ok()) {
      return JoinFailed(env, s.message());
    }
    // The rendezvous as a whole within `timeout`; every later store read
    // and collective gets all of it again.
    options.timeout = Remaining(deadline);
    auto tcp_store = JoinStore(env, options);
    tcp_store->setTimeout(timeout);
    ProcessGroupHandle handle;
    // Every blocking call under a deadline: a frozen store's host must not
    // block this rank forever (runtime/guarded_store.h).
    handle.store = c10::make_intrusive<GuardedStore>(AttemptKeyPrefix(), tcp_store, env.rank);
    handle.group = MakeGlooProcessGroup(handle.store, env.rank, env.world_size,
                                        timeout, GlooDevice(env));
    if (nccl != nullptr) {
      // Its own key space in the shared store, as c10d does per backend.
      auto nccl_store = c10::make_intrusive<c10d::PrefixStore>("nccl", handle.store);
      handle.group->setBackend(
          c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL,
          nccl->MakeNcclBackend(nccl_store, env.rank, env.world_size, timeout));
    }
    if (env.heartbeat_interval_ms > 0) {
      absl::StatusOr<std::unique_ptr<RankHeartbeat>> heartbeat = RankHeartbeat::Start(
          env.master_addr, env.master_port, env.rank,
          std::chrono::milliseconds(env.heartbeat_interval_ms));
      if (!heartbeat.ok()) return JoinFailed(env, heartbeat.status().message());
      handle.heartbeat = *std::move(heartbeat);
    }
    handle.gradient_group =
        gradients_over_mpi ? MakeMpiProcessGroup(handle.store, env.rank, env.world_size)
                           : handle.group;
    return handle;
  } catch (const std::exception& e) {
    return JoinFailed(env, LibTorchErrorMessage(e));
  }
}

absl::StatusOr<ProcessGroupHandle> ReformProcessGroup(
    const DistributedEnv& env, int membership, const std::vector<int>& launch_ranks,
    std::chrono::seconds timeout, std::shared_ptr<RankHeartbeat> heartbeat) {
  const auto mine = std::find(launch_ranks.begin(), launch_ranks.end(), env.rank);
  if (mine == launch_ranks.end()) {
    return absl::NotFoundError(absl::StrCat("launch rank ", env.rank, " is not in membership ",
                                            membership));
  }
  const int rank = static_cast<int>(mine - launch_ranks.begin());
  const int world_size = static_cast<int>(launch_ranks.size());
  IgnoreBrokenPipes();
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(env.master_port);
    options.isServer = false;
    options.waitWorkers = false;
    options.timeout = timeout;
    auto tcp_store = JoinStore(env, options);
    ProcessGroupHandle handle;
    handle.store = c10::make_intrusive<GuardedStore>(
        absl::StrCat(AttemptKeyPrefix(), "/membership-", membership), tcp_store, rank);
    handle.group =
        MakeGlooProcessGroup(handle.store, rank, world_size, timeout, GlooDevice(env));
    handle.gradient_group = handle.group;
    handle.heartbeat = std::move(heartbeat);
    return handle;
  } catch (const std::exception& e) {
    return JoinFailed(env, LibTorchErrorMessage(e));
  }
}

absl::Status StoreSet(c10d::Store& store, const std::string& key,
                      const std::string& value) {
  try {
    store.set(key, std::vector<uint8_t>(value.begin(), value.end()));
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("store: cannot set '", key, "': ", e.what()));
  }
}

absl::StatusOr<std::string> StoreGet(c10d::Store& store,
                                     const std::string& key) {
  try {
    std::vector<uint8_t> value = store.get(key);
    return std::string(value.begin(), value.end());
  } catch (const std::exception& e) {
    return absl::DeadlineExceededError(
        absl::StrCat("store: no '", key, "' in time: ", e.what()));
  }
}

namespace {

// Every rank compares every rank with rank 0, so all reach the same
// verdict.
absl::Status CompareWithRankZero(
    c10d::Store& store, int world_size,
    const std::vector<std::pair<std::string, std::string>>& fields) {
  for (int other = 1; other < world_size; ++other) {
    for (const auto& [name, value] : fields) {
      absl::StatusOr<std::string> reference =
          StoreGet(store, absl::StrCat("agree/0/", name));
      if (!reference.ok()) return reference.status();
      absl::StatusOr<std::string> theirs =
          StoreGet(store, absl::StrCat("agree/", other, "/", name));
      if (!theirs.ok()) return theirs.status();
      if (*theirs != *reference) {
        return absl::FailedPreconditionError(absl::StrCat(
            "rank ", other, " differs from rank 0 in ", name, ": ", *theirs,
            " != ", *reference));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status AgreeOnStart(
    c10d::Store& store, int rank, int world_size,
    const std::vector<std::pair<std::string, std::string>>& fields) {
  for (const auto& [name, value] : fields) {
    if (absl::Status s = StoreSet(store, absl::StrCat("agree/", rank, "/", name), value);
        !s.ok()) {
      return s;
    }
  }
  const absl::Status verdict = CompareWithRankZero(store, world_size, fields);
  // Rank 0 hosts the store: it returns (and may exit, closing the store)
  // only once every rank has read what it compares, or its reads failed.
  if (!absl::IsUnavailable(verdict) && !absl::IsDeadlineExceeded(verdict)) {
    if (absl::Status s = StoreSet(store, absl::StrCat("agree/compared/", rank), "1"); !s.ok()) {
      return s;
    }
  }
  for (int other = 1; rank == 0 && other < world_size; ++other) {
    if (!StoreGet(store, absl::StrCat("agree/compared/", other)).ok()) break;
  }
  return verdict;
}

absl::StatusOr<std::vector<std::string>> GatherBytesOnRankZero(
    c10d::Store& store, const std::string& prefix, int rank, int world_size,
    const std::string& mine) {
  if (absl::Status s = StoreSet(store, absl::StrCat(prefix, "/", rank), mine); !s.ok()) {
    return s;
  }
  std::vector<std::string> all;
  if (rank != 0) return all;
  for (int r = 0; r < world_size; ++r) {
    absl::StatusOr<std::string> bytes = StoreGet(store, absl::StrCat(prefix, "/", r));
    if (!bytes.ok()) {
      return absl::DeadlineExceededError(absl::StrCat(
          "rank ", r, " never published ", prefix, ": ", bytes.status().message()));
    }
    all.push_back(std::move(*bytes));
  }
  return all;
}

namespace {

// The first port of the kernel's ephemeral range, which every outgoing
// connection on the machine draws from (32768 when it cannot be read).
int FirstEphemeralPort() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int first = 0;
  if (range >> first && first > 1024) return first;
  return 32768;
}

// Whether `port` on 127.0.0.1 can be bound now.
bool CanBind(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return bound;
}

}  // namespace

absl::StatusOr<int> PickFreePort() {
  // A random port below the ephemeral range: a port the kernel handed out
  // (bind to port 0) is free only until the next outgoing connection takes
  // it, and concurrent runs' Gloo and store connections did (rank 0 could
  // not listen, "Address already in use").
  constexpr int kLowest = 10000;
  const int below = FirstEphemeralPort();
  if (below > kLowest + 1) {
    std::mt19937 random(std::random_device{}());
    std::uniform_int_distribution<int> ports(kLowest, below - 1);
    for (int attempt = 0; attempt < 64; ++attempt) {
      const int port = ports(random);
      if (CanBind(port)) return port;
    }
  }
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("cannot open a socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return absl::InternalError("cannot bind a free port on 127.0.0.1");
  }
  const int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

}  // namespace receipt_parity
