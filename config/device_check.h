// Step 7 of loading a config (config/config_loader.h): the devices it asks
// for are on this machine, and so is the memory for the ranks it starts
// here (CheckRanksFitThisMachine).
//
// `device: "cpu"` with `backend: "gloo"` checks and loads nothing. A config
// with `device: "cuda"` or `backend: "nccl"` loads the CUDA support library
// (runtime/cuda_support_loader.h) and counts the visible GPUs. Refused,
// with a field-path-prefixed InvalidArgument:
//   no GPU visible, or the library cannot be loaded ("device: \"cuda\" needs
//   a GPU, and none is visible here ...");
//   backend nccl with more ranks on this machine than visible GPUs ("backend:
//   nccl puts each rank on its own GPU (NCCL refuses two ranks on one GPU)
//   ...").
#ifndef RECEIPT_PARITY_CONFIG_DEVICE_CHECK_H_
#define RECEIPT_PARITY_CONFIG_DEVICE_CHECK_H_

#include <c10/core/Device.h>

#include "absl/status/status.h"
#include "config/config.pb.h"

namespace receipt_parity {

// Whether `config` (defaults applied) runs on CUDA devices or NCCL.
bool NeedsCuda(const TrainingConfig& config);

// The ranks of `config` that run on this machine: LOCAL_WORLD_SIZE
// (torchrun) or OMPI_COMM_WORLD_LOCAL_SIZE (mpirun) when set; else 1 for a
// rank started by another launcher (RANK set), and world_size for the
// local launcher, which starts every rank here.
int LocalRankCount(const TrainingConfig& config);

// The check described above, for `local_ranks` ranks on this machine.
absl::Status CheckDevicesAvailable(const TrainingConfig& config, int local_ranks);

// What one rank process takes before its data: LibTorch loaded, the model,
// the optimizer and the loop (measured: 178-184 MiB per rank for the
// default CNN on LibTorch 2.11).
inline constexpr int64_t kRankBaselineBytes = int64_t{150} << 20;

// `local_ranks` ranks, each holding the data (SyntheticTensorBytes) besides
// kRankBaselineBytes, fit in this machine's physical memory; else
// InvalidArgument "world_size: 4000 ranks on this machine need about
// 586 GiB (4000 x 150 MiB ...); it has 23.4 GiB". Three ranks on two
// cores are allowed: only memory bounds it.
absl::Status CheckRanksFitThisMachine(const TrainingConfig& config, int local_ranks);

// The device the rank with `local_rank` computes on: the CPU, or
// cuda:(local_rank % visible GPUs), which is cuda:LOCAL_RANK whenever each
// rank has its own GPU (always under NCCL); over Gloo, ranks beyond the
// GPU count share them. Makes that GPU the current device.
// REQUIRES: CheckDevicesAvailable(config, ...) succeeded in this process.
c10::Device RankDevice(const TrainingConfig& config, int local_rank);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFIG_DEVICE_CHECK_H_
