// Rendezvous and the c10d process group of one rank.
//
// Rank 0 hosts a c10d TCPStore (unless this binary's launcher hosts it:
// RECEIPT_PARITY_LAUNCHER_STORE=1, runtime/launcher.h) at MASTER_ADDR:MASTER_PORT, listening on
// that address only (127.0.0.1 for the local launcher: loopback only), not
// on every interface (unless TORCHELASTIC_USE_AGENT_STORE=True: torchrun's
// agent hosts it, listening where torchrun's --master_addr says); every rank
// joins it and builds a c10d ProcessGroup over it: Gloo for CPU tensors,
// and for CUDA tensors either Gloo too or, for `backend: "nccl"`, c10d's
// NCCL backend (runtime/cuda_support.h). Nothing here implements a
// collective: small metadata goes through the store, tensors through the
// process group.
//
// Every key the run writes lives under "attempt-N/", N being
// TORCHELASTIC_RESTART_COUNT (0 when unset), so that ranks restarted by
// torchrun's elastic agent, whose store outlives them, never read what an
// earlier attempt wrote.
//
// The Gloo transport device: GLOO_SOCKET_IFNAME names the interface (as in
// PyTorch); otherwise loopback for a loopback MASTER_ADDR, else the address
// this host uses to reach MASTER_ADDR.
#ifndef RECEIPT_PARITY_RUNTIME_PROCESS_GROUP_H_
#define RECEIPT_PARITY_RUNTIME_PROCESS_GROUP_H_

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "runtime/cuda_support.h"
#include "runtime/distributed_env.h"
#include "runtime/heartbeat.h"

namespace receipt_parity {

struct ProcessGroupHandle {
  c10::intrusive_ptr<c10d::Store> store;
  // Gloo (and NCCL for CUDA tensors): start agreement, gathers, and the
  // gradients unless they have a transport of their own.
  c10::intrusive_ptr<c10d::ProcessGroup> group;
  // What the reducers reduce gradients over: `group`, or for backend "mpi"
  // a group over OpenMPI (runtime/mpi_backend.h).
  c10::intrusive_ptr<c10d::ProcessGroup> gradient_group;
  // With RECEIPT_PARITY_HEARTBEAT_MS: this rank's heartbeat
  // (runtime/heartbeat.h), beating until the handle's last copy goes.
  std::shared_ptr<RankHeartbeat> heartbeat;
};

// A rank that joins ignores SIGPIPE from then on (process-wide): a write to
// a dead peer's socket is the collective's error, not the rank's death.
//
// Blocks until every rank has joined or `timeout` passes (then
// DeadlineExceeded naming the address, within about a second of it, on the
// store's host and on every other rank). The timeout also bounds every
// later collective and store read.
// `nccl` non-null: CUDA tensors are reduced by the NCCL backend it makes
// (REQUIRES: this rank's GPU is the current device); else by Gloo.
// `gradients_over_mpi`: the gradient group is OpenMPI's (REQUIRES: MPI
// started, runtime/mpi_world.h); else it is `group` itself.
absl::StatusOr<ProcessGroupHandle> ConnectProcessGroup(
    const DistributedEnv& env, std::chrono::seconds timeout,
    const CudaSupport* nccl = nullptr, bool gradients_over_mpi = false);

// A new Gloo group of the ranks in membership `membership` (launch ranks,
// runtime/membership.h), joined by this rank, launch rank env.rank: its
// group rank is its index there. Over a new connection to the launcher's
// store (REQUIRES: env.launcher_hosts_store), its keys under
// "attempt-N/membership-K/", so nothing the earlier group wrote is read.
// The heartbeat goes on as it was (the launcher watches launch ranks).
// Errors as ConnectProcessGroup's; NotFound when env.rank is not in
// `launch_ranks`.
absl::StatusOr<ProcessGroupHandle> ReformProcessGroup(
    const DistributedEnv& env, int membership, const std::vector<int>& launch_ranks,
    std::chrono::seconds timeout, std::shared_ptr<RankHeartbeat> heartbeat);

// Start-of-run agreement. Every rank publishes `fields` (name, value) and
// compares every other rank's with its own. On a mismatch EVERY rank gets
// FailedPrecondition naming the first differing rank and field with both
// values, e.g. "rank 1 differs in config_fingerprint: 3f2a... != 9c01...".
// Rank 0, which hosts the store, returns only once every other rank has
// compared (or the store failed it), so that its exit on a mismatch does
// not close the store under a rank still reading.
absl::Status AgreeOnStart(
    c10d::Store& store, int rank, int world_size,
    const std::vector<std::pair<std::string, std::string>>& fields);

// Small byte strings through the store (reports, shard confirmations).
absl::Status StoreSet(c10d::Store& store, const std::string& key,
                      const std::string& value);
// Waits (up to the store's timeout) for `key`.
absl::StatusOr<std::string> StoreGet(c10d::Store& store, const std::string& key);

// Every rank publishes `mine` under "<prefix>/<rank>"; rank 0 waits (up to
// the store's timeout) for every rank's and gets them in rank order; the
// other ranks get an empty vector. DeadlineExceeded names a rank that never
// published, DataLoss one whose bytes do not parse.
absl::StatusOr<std::vector<std::string>> GatherBytesOnRankZero(
    c10d::Store& store, const std::string& prefix, int rank, int world_size,
    const std::string& mine);

// GatherBytesOnRankZero for a protobuf message.
template <typename Message>
absl::StatusOr<std::vector<Message>> GatherOnRankZero(
    c10d::Store& store, const std::string& prefix, int rank, int world_size,
    const Message& mine) {
  absl::StatusOr<std::vector<std::string>> bytes = GatherBytesOnRankZero(
      store, prefix, rank, world_size, mine.SerializeAsString());
  if (!bytes.ok()) return bytes.status();
  std::vector<Message> all(bytes->size());
  for (size_t r = 0; r < bytes->size(); ++r) {
    if (!all[r].ParseFromString((*bytes)[r])) {
      return absl::DataLossError(absl::StrCat(prefix, "/", r, " from rank ", r,
                                              " does not parse"));
    }
  }
  return all;
}

// A free TCP port on 127.0.0.1, for a local launcher's MASTER_PORT: a
// random one below the kernel's ephemeral range (which outgoing connections
// draw from, so a port it hands out may be taken before rank 0 listens)
// that can be bound now; the kernel's pick when none of 64 can.
absl::StatusOr<int> PickFreePort();

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_PROCESS_GROUP_H_
