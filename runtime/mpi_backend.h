// OpenMPI as a c10d backend: the transport for gradients under
// `backend: "mpi"`, chosen like Gloo and NCCL, under which the sum reducers
// (reducers/allreduce_sum_reducer.h, rank_average) run unchanged, since they
// only ever call c10d::ProcessGroup::allreduce.
//
// The backend implements one collective, what a reducer needs: an
// all-reduce SUM, in place, of contiguous float32 or float64 CPU tensors,
// one MPI_Allreduce(MPI_IN_PLACE, ..., MPI_SUM) over MPI_COMM_WORLD per
// tensor. It is blocking (MPI's blocking collective: the Work returned is
// already complete); everything else throws. Nothing here reimplements the
// reduction: MPI does it. The store and the Gloo group still carry start
// agreement, gathers and checkpoint confirmations (runtime/process_group.h).
//
// Bitwise: with two ranks each element is one IEEE addition a+b, so the
// result equals Gloo's bit for bit and is the same on both ranks. With
// N > 2 ranks the association order is OpenMPI's choice (algorithm and
// message size), deterministic for a fixed N, message size and OpenMPI
// configuration and the same on every rank, but not necessarily Gloo's.
//
// REQUIRES: ranks started by mpirun and MPI started (runtime/mpi_world.h)
// before the first collective; making the group needs no MPI.
// Thread safety: MPI runs MPI_THREAD_SERIALIZED; one collective at a time
// per process (the reducers issue them from one thread, in order).
#ifndef RECEIPT_PARITY_RUNTIME_MPI_BACKEND_H_
#define RECEIPT_PARITY_RUNTIME_MPI_BACKEND_H_

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "absl/status/status.h"

namespace receipt_parity {

// The backend's name, as c10d reports it (getBackendName()).
inline constexpr char kMpiBackendName[] = "mpi";

// Replaces `flat` on every rank with the element-wise SUM over all ranks of
// MPI_COMM_WORLD, in place. Every rank calls it with a buffer of the same
// size and dtype. Errors: InvalidArgument for a tensor that is undefined,
// not on the CPU, not contiguous, or not float32/float64 (checked before
// any communication); FailedPrecondition when MPI is not running; Internal
// with MPI's message when MPI_Allreduce fails.
absl::Status MpiAllreduceSumInPlace(at::Tensor& flat);

// A c10d ProcessGroup of rank `rank` of `world_size` whose CPU collectives
// go to the MPI backend. `store` is only kept (c10d requires one). Its
// allreduce throws c10::Error with MpiAllreduceSumInPlace's message, and
// for a reduce op other than SUM or a world that is not MPI's (rank or size
// differ from MPI_COMM_WORLD's).
c10::intrusive_ptr<c10d::ProcessGroup> MakeMpiProcessGroup(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_MPI_BACKEND_H_
