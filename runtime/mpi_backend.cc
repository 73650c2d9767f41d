#include "runtime/mpi_backend.h"

#include <mpi.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

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

absl::Status CheckFlat(const at::Tensor& flat) {
  if (!flat.defined()) return absl::InvalidArgumentError("mpi: undefined tensor");
  if (!flat.device().is_cpu()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mpi: reduces CPU tensors only, got one on ", flat.device().str()));
  }
  if (!flat.is_contiguous()) {
    return absl::InvalidArgumentError("mpi: the tensor is not contiguous");
  }
  if (flat.scalar_type() != at::kFloat && flat.scalar_type() != at::kDouble) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mpi: float32 or float64 only, got ", c10::toString(flat.scalar_type())));
  }
  return absl::OkStatus();
}

// A collective that MPI finished before returning.
class CompletedWork : public c10d::Work {
 public:
  explicit CompletedWork(int rank) : c10d::Work(rank, c10d::OpType::ALLREDUCE) {
    finish();
  }
};

class MpiBackend : public c10d::Backend {
 public:
  MpiBackend(int rank, int size) : c10d::Backend(rank, size) {}

  const std::string getBackendName() const override { return kMpiBackendName; }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& options) override {
    TORCH_CHECK(options.reduceOp == c10d::ReduceOp::SUM,
                "mpi: the MPI backend reduces with SUM only");
    CheckWorld();
    for (at::Tensor& tensor : tensors) {
      const absl::Status summed = MpiAllreduceSumInPlace(tensor);
      TORCH_CHECK(summed.ok(), std::string(summed.message()));
    }
    return c10::make_intrusive<CompletedWork>(getRank());
  }

 private:
  // The group's ranks must be MPI_COMM_WORLD's (the binary was started by
  // the mpirun whose variables it read).
  void CheckWorld() const {
    if (!MpiRunning()) return;  // MpiAllreduceSumInPlace says so
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    TORCH_CHECK(rank == getRank() && size == getSize(), "mpi: MPI's world is rank ", rank,
                " of ", size, ", the process group's rank ", getRank(), " of ", getSize());
  }
};

}  // namespace

absl::Status MpiAllreduceSumInPlace(at::Tensor& flat) {
  if (absl::Status s = CheckFlat(flat); !s.ok()) return s;
  if (!MpiRunning()) {
    return absl::FailedPreconditionError(
        "mpi: MPI is not running (ranks of backend \"mpi\" must be started by mpirun)");
  }
  const MPI_Datatype type = flat.scalar_type() == at::kFloat ? MPI_FLOAT : MPI_DOUBLE;
  // MPI counts are ints: a larger tensor goes in pieces (element-wise, so
  // the sums are the same).
  constexpr int64_t kMostPerCall = std::numeric_limits<int>::max();
  char* data = static_cast<char*>(flat.data_ptr());
  const int64_t element = flat.element_size();
  for (int64_t done = 0; done < flat.numel();) {
    const int count = static_cast<int>(std::min(kMostPerCall, flat.numel() - done));
    const int code = MPI_Allreduce(MPI_IN_PLACE, data + done * element, count, type,
                                   MPI_SUM, MPI_COMM_WORLD);
    if (code != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING] = {};
      int length = 0;
      MPI_Error_string(code, text, &length);
      return absl::InternalError(absl::StrCat("mpi: MPI_Allreduce failed: ", text));
    }
    done += count;
  }
  return absl::OkStatus();
}

c10::intrusive_ptr<c10d::ProcessGroup> MakeMpiProcessGroup(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size) {
  auto group = c10::make_intrusive<c10d::ProcessGroup>(store, rank, world_size);
  auto mpi = c10::make_intrusive<MpiBackend>(rank, world_size);
  group->setDefaultBackend(c10d::ProcessGroup::BackendType::CUSTOM);
  group->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::CUSTOM, mpi);
  return group;
}

}  // namespace receipt_parity
