// The numerical settings a rank computes under, applied once per process
// before its model is built, and run_manifest.json's record of them
// (PlatformRecord in artifacts/run_manifest.proto).
//
// On every device: `run.intra_op_threads` intra-op threads, fp32 matmuls at
// "highest" precision (never lowered to TF32 or bf16). On CUDA, in
// addition: deterministic algorithms on (an op without a deterministic
// kernel throws instead of running), cuDNN deterministic with its benchmark
// mode off, TF32 off for cuBLAS and cuDNN, and CUBLAS_WORKSPACE_CONFIG
// ":4096:8" unless the environment sets it (cuBLAS needs it to be
// deterministic, and reads it when it starts). The CPU keeps LibTorch's
// defaults otherwise: its kernels here are deterministic already.
#ifndef RECEIPT_PARITY_TRAINER_COMPUTE_SETTINGS_H_
#define RECEIPT_PARITY_TRAINER_COMPUTE_SETTINGS_H_

#include <c10/core/Device.h>

#include "absl/status/statusor.h"
#include "artifacts/run_manifest.pb.h"
#include "config/config.pb.h"

namespace receipt_parity {

// Applies the settings for `device` and returns what is in effect
// afterwards (read back from LibTorch, not copied from the config), with
// the LibTorch, CUDA, cuDNN and NCCL versions and the GPU's name.
// REQUIRES: on CUDA, the CUDA support library is loaded
// (config/device_check.h). Errors: Internal with LibTorch's message.
absl::StatusOr<PlatformRecord> ApplyComputeSettings(const TrainingConfig& config,
                                                    c10::Device device);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_COMPUTE_SETTINGS_H_
