#include "reducers/mpi_allreduce.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "absl/strings/str_cat.h"

namespace receipt_parity {
namespace {

bool MpiRunning() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized != 0 && finalized == 0;
}

absl::Status CheckFlatBucket(const at::Tensor& flat) {
  if (!flat.defined()) return absl::InvalidArgumentError("mpi_allreduce: undefined bucket");
  if (!flat.device().is_cpu()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mpi_allreduce: reduces CPU tensors only, got one on ", flat.device().str()));
  }
  if (!flat.is_contiguous()) {
    return absl::InvalidArgumentError("mpi_allreduce: the bucket is not contiguous");
  }
  if (flat.scalar_type() != at::kFloat && flat.scalar_type() != at::kDouble) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mpi_allreduce: float32 or float64 only, got ", c10::toString(flat.scalar_type())));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MpiAllreduceSumInPlace(at::Tensor& flat_bucket) {
  if (absl::Status s = CheckFlatBucket(flat_bucket); !s.ok()) return s;
  if (!MpiRunning()) {
    return absl::FailedPreconditionError(
        "mpi_allreduce: MPI is not running (ranks must be started by mpirun, "
        "with reducer mpi_allreduce selected)");
  }
  const MPI_Datatype type = flat_bucket.scalar_type() == at::kFloat ? MPI_FLOAT : MPI_DOUBLE;
  // MPI counts are ints: a larger bucket goes in pieces (element-wise, so
  // the sums are the same).
  constexpr int64_t kMostPerCall = std::numeric_limits<int>::max();
  char* data = static_cast<char*>(flat_bucket.data_ptr());
  const int64_t element = flat_bucket.element_size();
  for (int64_t done = 0; done < flat_bucket.numel();) {
    const int count = static_cast<int>(std::min(kMostPerCall, flat_bucket.numel() - done));
    const int code = MPI_Allreduce(MPI_IN_PLACE, data + done * element, count, type,
                                   MPI_SUM, MPI_COMM_WORLD);
    if (code != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING] = {};
      int length = 0;
      MPI_Error_string(code, text, &length);
      return absl::InternalError(absl::StrCat("mpi_allreduce: MPI_Allreduce failed: ", text));
    }
    done += count;
  }
  return absl::OkStatus();
}

absl::StatusOr<MpiAllreduceReducer> MpiAllreduceReducer::Create(int64_t bucket_cap_bytes) {
  absl::StatusOr<int64_t> cap = BucketCapBytes(bucket_cap_bytes);
  if (!cap.ok()) return cap.status();
  return MpiAllreduceReducer(*cap);
}

std::vector<GradientBucket> MpiAllreduceReducer::PlanBuckets(
    const std::vector<at::Tensor>& gradients) const {
  return receipt_parity::PlanBuckets(gradients, bucket_cap_bytes_);
}

absl::Status MpiAllreduceReducer::ReduceBucket(at::Tensor& flat, c10d::ProcessGroup& group) {
  int mpi_size = 0;
  if (MpiRunning()) MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  if (MpiRunning() && mpi_size != group.getSize()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "mpi_allreduce: MPI's world has ", mpi_size, " ranks, the process group ",
        group.getSize()));
  }
  if (flat.defined() && flat.numel() == 0) return absl::OkStatus();  // every rank skips it
  const auto start = std::chrono::steady_clock::now();
  if (absl::Status s = MpiAllreduceSumInPlace(flat); !s.ok()) return s;
  stats_.seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++stats_.collectives;
  stats_.bytes += flat.numel() * flat.element_size();
  return absl::OkStatus();
}

}  // namespace receipt_parity
