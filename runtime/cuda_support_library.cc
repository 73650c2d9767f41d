// The CUDA support library (libcuda_support.so): the one place that links
// libtorch_cuda. Loaded by the host only for GPU runs (cuda_support.h).
#include <cstdlib>
#include <memory>
#include <string>

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#include <torch/csrc/cuda/nccl.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "runtime/cuda_support.h"

namespace receipt_parity {
namespace {

// 13000 -> "13.0.0"; 91900 (cuDNN 9.19.0) -> "9.19.0".
std::string CudaStyleVersion(long v, long major_unit, long minor_unit) {
  if (v <= 0) return "";
  return std::to_string(v / major_unit) + "." +
         std::to_string((v % major_unit) / minor_unit) + "." +
         std::to_string(v % minor_unit);
}

// torch::cuda::nccl::version() packs major << 32 | minor << 16 | patch.
std::string NcclVersion(std::uint64_t v) {
  return std::to_string(v >> 32) + "." + std::to_string((v >> 16) & 0xffff) +
         "." + std::to_string(v & 0xffff);
}

class LibTorchCudaSupport : public CudaSupport {
 public:
  int VisibleDeviceCount() const override {
    return static_cast<int>(c10::cuda::device_count());
  }

  CudaVersions Versions() const override {
    CudaVersions v;
    int runtime = 0;
    if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) {
      v.cuda_runtime = CudaStyleVersion(runtime, 1000, 10);
    }
    try {
      v.cudnn = CudaStyleVersion(at::detail::getCUDAHooks().versionCuDNN(),
                                 10000, 100);
    } catch (const std::exception&) {
      // No cuDNN: left empty.
    }
    try {
      v.nccl = NcclVersion(torch::cuda::nccl::version());
    } catch (const std::exception&) {
      // No NCCL: left empty.
    }
    return v;
  }

  std::string DeviceName(int device_index) const override {
    cudaDeviceProp properties{};
    const cudaError_t error = cudaGetDeviceProperties(&properties, device_index);
    TORCH_CHECK(error == cudaSuccess, "cudaGetDeviceProperties(", device_index,
                "): ", cudaGetErrorString(error));
    return properties.name;
  }

  void SetCurrentDevice(int device_index) const override {
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(device_index));
  }

  c10::intrusive_ptr<c10d::Backend> MakeNcclBackend(
      const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
      std::chrono::milliseconds timeout) const override {
    // A collective past the timeout throws in the waiting rank instead of
    // the watchdog aborting the process, as Gloo's timeouts do.
    setenv("TORCH_NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size,
                                                       options);
  }
};

const bool registered = [] {
  RegisterCudaSupport(std::make_unique<LibTorchCudaSupport>());
  return true;
}();

}  // namespace
}  // namespace receipt_parity
