#include "runtime/process_group.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "absl/strings/str_cat.h"
#include "runtime/gloo_process_group.h"

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

}  // namespace

absl::StatusOr<ProcessGroupHandle> ConnectProcessGroup(
    const DistributedEnv& env, std::chrono::seconds timeout,
    const CudaSupport* nccl) {
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(env.master_port);
    // Under torchrun the elastic agent already hosts the store (as
    // PyTorch's env:// rendezvous honours too).
    const char* agent_store = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
    const bool agent_hosts_store =
        agent_store != nullptr && std::string(agent_store) == "True";
    options.isServer = env.rank == 0 && !agent_hosts_store;
    options.numWorkers = env.world_size;
    options.waitWorkers = true;
    options.timeout = timeout;
    ProcessGroupHandle handle;
    handle.store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
    handle.group = MakeGlooProcessGroup(handle.store, env.rank, env.world_size,
                                        timeout, GlooDevice(env));
    if (nccl != nullptr) {
      // Its own key space in the shared store, as c10d does per backend.
      auto nccl_store = c10::make_intrusive<c10d::PrefixStore>("nccl", handle.store);
      handle.group->setBackend(
          c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL,
          nccl->MakeNcclBackend(nccl_store, env.rank, env.world_size, timeout));
    }
    return handle;
  } catch (const std::exception& e) {
    return absl::DeadlineExceededError(absl::StrCat(
        "rank ", env.rank, ": cannot join the process group at ",
        env.master_addr, ":", env.master_port, " (world size ",
        env.world_size, "): ", e.what()));
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

absl::Status AgreeOnStart(
    c10d::Store& store, int rank, int world_size,
    const std::vector<std::pair<std::string, std::string>>& fields) {
  for (const auto& [name, value] : fields) {
    if (absl::Status s = StoreSet(store, absl::StrCat("agree/", rank, "/", name), value);
        !s.ok()) {
      return s;
    }
  }
  // Every rank compares every rank with rank 0, so all reach the same verdict.
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

absl::StatusOr<int> PickFreePort() {
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
