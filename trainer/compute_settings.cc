#include "trainer/compute_settings.h"

#include <cstdlib>
#include <exception>
#include <string>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/headeronly/version.h>

#include "collectives/collective_error.h"
#include "runtime/cuda_support_loader.h"

namespace receipt_parity {
namespace {

constexpr char kCublasWorkspace[] = "CUBLAS_WORKSPACE_CONFIG";

std::string PrecisionName(at::Float32MatmulPrecision precision) {
  switch (precision) {
    case at::Float32MatmulPrecision::HIGHEST:
      return "highest";
    case at::Float32MatmulPrecision::HIGH:
      return "high";
    case at::Float32MatmulPrecision::MEDIUM:
      return "medium";
  }
  return "unknown";
}

void ApplyCudaDeterminism(at::Context& context) {
  setenv(kCublasWorkspace, ":4096:8", /*overwrite=*/0);
  context.setDeterministicAlgorithms(true, /*warn_only=*/false);
  context.setDeterministicCuDNN(true);
  context.setBenchmarkCuDNN(false);
  context.setAllowTF32CuBLAS(false);
  context.setAllowTF32CuDNN(false);
}

void RecordCuda(c10::Device device, PlatformRecord* record) {
  const CudaSupport* support = LoadedCudaSupport();
  if (support == nullptr) return;
  const CudaVersions versions = support->Versions();
  record->set_cuda_runtime(versions.cuda_runtime);
  record->set_cudnn(versions.cudnn);
  record->set_nccl(versions.nccl);
  if (device.is_cuda()) record->set_device_name(support->DeviceName(device.index()));
}

PlatformRecord ApplyOrThrow(const TrainingConfig& config, c10::Device device) {
  at::Context& context = at::globalContext();
  at::set_num_threads(config.run().intra_op_threads());
  context.setFloat32MatmulPrecision("highest");
  if (device.is_cuda()) ApplyCudaDeterminism(context);
  PlatformRecord record;
  record.set_libtorch_version(TORCH_VERSION);
  record.set_device(device.str());
  record.set_backend(config.backend());
  record.set_intra_op_threads(at::get_num_threads());
  record.set_deterministic_algorithms(context.deterministicAlgorithms());
  record.set_cudnn_deterministic(context.deterministicCuDNN());
  record.set_cudnn_benchmark(context.benchmarkCuDNN());
  record.set_allow_tf32_cublas(context.allowTF32CuBLAS());
  record.set_allow_tf32_cudnn(context.allowTF32CuDNN());
  record.set_float32_matmul_precision(PrecisionName(context.float32MatmulPrecision()));
  if (const char* workspace = std::getenv(kCublasWorkspace)) {
    record.set_cublas_workspace_config(workspace);
  }
  RecordCuda(device, &record);
  return record;
}

}  // namespace

absl::StatusOr<PlatformRecord> ApplyComputeSettings(const TrainingConfig& config,
                                                    c10::Device device) {
  try {
    return ApplyOrThrow(config, device);
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "compute settings: LibTorch");
  }
}

}  // namespace receipt_parity
