#include "runtime/mpi_world.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runtime/process_group.h"

namespace receipt_parity {
namespace {

bool started = false;

absl::Status MpiError(const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  return absl::InternalError(absl::StrCat(call, " failed: ", text));
}

// The first IPv4 address of an interface that is up and not loopback;
// `fallback` when there is none.
std::string ThisHostsAddress(const std::string& fallback) {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return fallback;
  std::string found = fallback;
  for (ifaddrs* a = all; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if ((a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text)) != nullptr) {
      found = text;
      break;
    }
  }
  freeifaddrs(all);
  return found;
}

// Rank 0's choice of the store's address (see the header).
std::string StoreAddressOfRankZero(const std::string& configured_addr, int world_size) {
  if (const char* addr = std::getenv("MASTER_ADDR"); addr != nullptr && *addr != '\0') {
    return addr;
  }
  int local_size = world_size;
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (local != nullptr && absl::SimpleAtoi(local, &local_size) && local_size < world_size) {
    return ThisHostsAddress(configured_addr);
  }
  return configured_addr;
}

}  // namespace

absl::Status StartMpi(const DistributedEnv& env) {
  if (started) return absl::OkStatus();
  int provided = 0;
  if (const int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      code != MPI_SUCCESS) {
    return MpiError("MPI_Init_thread", code);
  }
  started = true;
  // Errors come back as codes, never abort the process from inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_SERIALIZED) {
    return absl::FailedPreconditionError(absl::StrCat(
        "MPI grants thread level ", provided, ", below MPI_THREAD_SERIALIZED (",
        MPI_THREAD_SERIALIZED, ")"));
  }
  int rank = -1;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank != env.rank || size != env.world_size) {
    return absl::FailedPreconditionError(absl::StrCat(
        "MPI_COMM_WORLD has this process as rank ", rank, " of ", size,
        ", its environment says rank ", env.rank, " of ", env.world_size));
  }
  return absl::OkStatus();
}

bool MpiStarted() { return started; }

absl::Status FinishMpi() {
  if (!started) return absl::OkStatus();
  started = false;
  if (const int code = MPI_Finalize(); code != MPI_SUCCESS) {
    return MpiError("MPI_Finalize", code);
  }
  return absl::OkStatus();
}

absl::StatusOr<DistributedEnv> ShareStoreAddressOverMpi(
    DistributedEnv env, const std::string& configured_addr) {
  if (!env.store_address_over_mpi) return env;
  // "address:port", NUL-terminated, in a buffer of one fixed size.
  std::vector<char> message(256, '\0');
  if (env.rank == 0) {
    absl::StatusOr<int> port = PickFreePort();
    if (!port.ok()) return port.status();
    const std::string text = absl::StrCat(
        StoreAddressOfRankZero(configured_addr, env.world_size), ":", *port);
    if (text.size() >= message.size()) {
      return absl::InvalidArgumentError(absl::StrCat("store address too long: ", text));
    }
    std::memcpy(message.data(), text.data(), text.size());
  }
  if (const int code = MPI_Bcast(message.data(), static_cast<int>(message.size()), MPI_CHAR,
                                 0, MPI_COMM_WORLD);
      code != MPI_SUCCESS) {
    return MpiError("MPI_Bcast of the store's address", code);
  }
  const std::string text(message.data());
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(text.substr(colon + 1), &env.master_port)) {
    return absl::InternalError(absl::StrCat("rank 0 shared no store address: '", text, "'"));
  }
  env.master_addr = text.substr(0, colon);
  env.store_address_over_mpi = false;
  return env;
}

}  // namespace receipt_parity
