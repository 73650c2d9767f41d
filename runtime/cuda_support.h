// What a run on GPUs needs from CUDA, behind one interface.
//
// The project links libtorch_cuda into one shared library only, the CUDA
// support library (runtime/libcuda_support.so), which the host loads
// (runtime/cuda_support_loader.h) only when a config asks for
// `device: "cuda"` or `backend: "nccl"`. Merely loading libtorch_cuda costs
// a process about 235 MB of resident memory, so CPU runs never do.
//
// This header is the whole contract between the two: the library defines a
// CudaSupport and hands it to RegisterCudaSupport from a static
// initializer; the host defines RegisterCudaSupport and exports it
// (-rdynamic). The library depends on nothing of the host but this header.
#ifndef RECEIPT_PARITY_RUNTIME_CUDA_SUPPORT_H_
#define RECEIPT_PARITY_RUNTIME_CUDA_SUPPORT_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace receipt_parity {

// Versions as "major.minor.patch"; empty when not known.
struct CudaVersions {
  std::string cuda_runtime;
  std::string cudnn;
  std::string nccl;
};

class CudaSupport {
 public:
  virtual ~CudaSupport() = default;

  // GPUs this process may use (CUDA_VISIBLE_DEVICES applies); 0 on a
  // machine without a GPU or driver. Never throws.
  virtual int VisibleDeviceCount() const = 0;

  virtual CudaVersions Versions() const = 0;

  // The name of GPU `device_index` (e.g. "NVIDIA H200"). Throws c10::Error
  // for an index that is not visible.
  virtual std::string DeviceName(int device_index) const = 0;

  // Makes `device_index` this thread's current CUDA device. Throws
  // c10::Error.
  virtual void SetCurrentDevice(int device_index) const = 0;

  // c10d's NCCL backend for rank `rank` of `world_size`, rendezvousing
  // through `store`. Its collectives take CUDA tensors of the current
  // device. Throws c10::Error (e.g. "ProcessGroupNCCL is only supported
  // with GPUs, no GPUs found!").
  virtual c10::intrusive_ptr<c10d::Backend> MakeNcclBackend(
      const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
      std::chrono::milliseconds timeout) const = 0;
};

// Defined by the host; called once by the CUDA support library as it is
// loaded. The host owns `support` from then on.
void RegisterCudaSupport(std::unique_ptr<CudaSupport> support);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_CUDA_SUPPORT_H_
