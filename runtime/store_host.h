// The host of a run's c10d TCPStore: a process that listens at an address
// and port and serves the keys the ranks set and read.
//
// Rank 0 hosts it under torchrun's conventions (runtime/process_group.h);
// this binary's own launcher hosts it itself (runtime/launcher.h), so that
// the store, and with it the keys the ranks need to go on after one of
// them is lost (runtime/heartbeat.h), lives in a process that no rank's
// death takes down.
#ifndef RECEIPT_PARITY_RUNTIME_STORE_HOST_H_
#define RECEIPT_PARITY_RUNTIME_STORE_HOST_H_

#include <netdb.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "absl/status/statusor.h"

namespace receipt_parity {

// The TCP addresses of `address`:`port` (getaddrinfo's list, freed with
// the pointer). InvalidArgument "MASTER_ADDR=<address> does not resolve:
// ..." when the name does not resolve.
using TcpAddresses = std::unique_ptr<addrinfo, decltype(&freeaddrinfo)>;
absl::StatusOr<TcpAddresses> ResolveTcpAddress(const std::string& address, int port);

// A TCP socket bound to `address`'s own address (not every interface, as
// c10d's TCPStore would bind) and `port`, listening. InvalidArgument when
// `address` does not resolve, Unavailable naming address, port and the
// reason when it cannot listen. The caller owns the descriptor.
absl::StatusOr<int> ListenOnAddress(const std::string& address, int port);

// A c10d TCPStore server at `address`:`port` (ListenOnAddress), waiting for
// no worker: ranks come and go. `timeout` bounds its own reads. Errors as
// ListenOnAddress's, or Internal with what c10d threw.
absl::StatusOr<c10::intrusive_ptr<c10d::TCPStore>> HostStore(const std::string& address,
                                                             int port,
                                                             std::chrono::milliseconds timeout);

// A c10d TCPStore client of the store at `address`:`port`, its calls bound
// by `timeout`. Internal with what c10d threw when it cannot connect.
absl::StatusOr<c10::intrusive_ptr<c10d::TCPStore>> ConnectToStore(
    const std::string& address, int port, std::chrono::milliseconds timeout);

// The value of `key` when `store` holds it now, without waiting; nullopt
// when it does not, or when the store cannot be read.
std::optional<std::string> ValueIfPresent(c10d::Store& store, const std::string& key);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_STORE_HOST_H_
