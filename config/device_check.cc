#include "config/device_check.h"

#include <cstdlib>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "data/data_config.h"
#include "runtime/cuda_support_loader.h"

namespace receipt_parity {
namespace {

int PositiveFromEnvironment(const char* name, int otherwise) {
  const char* text = std::getenv(name);
  int value = 0;
  if (text == nullptr || !absl::SimpleAtoi(text, &value) || value < 1) {
    return otherwise;
  }
  return value;
}

// The field a refusal names: device when it asks for cuda, else backend.
std::string CudaField(const TrainingConfig& config) {
  return config.device() == "cuda" ? "device" : "backend";
}

std::string CudaValue(const TrainingConfig& config) {
  return config.device() == "cuda" ? "\"cuda\"" : "\"nccl\"";
}

double GiB(double bytes) { return bytes / double(int64_t{1} << 30); }

}  // namespace

absl::Status CheckRanksFitThisMachine(const TrainingConfig& config, int local_ranks) {
  const int64_t per_rank = kRankBaselineBytes + SyntheticTensorBytes(config.data());
  const int64_t physical = PhysicalMemoryBytes();
  // In double: local_ranks x per_rank may not fit in int64.
  const double needed = static_cast<double>(local_ranks) * static_cast<double>(per_rank);
  if (needed <= static_cast<double>(physical)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "world_size: %d ranks on this machine need about %.1f GiB (%d x (%d MiB "
      "per LibTorch process + %.1f MiB of receipts)); it has %.1f GiB. Start "
      "fewer ranks per machine (several hosts: RANK, WORLD_SIZE, MASTER_ADDR)",
      local_ranks, GiB(needed), local_ranks, static_cast<int>(kRankBaselineBytes >> 20),
      static_cast<double>(SyntheticTensorBytes(config.data())) / (1 << 20),
      GiB(static_cast<double>(physical))));
}

bool NeedsCuda(const TrainingConfig& config) {
  return config.device() == "cuda" || config.backend() == "nccl";
}

int LocalRankCount(const TrainingConfig& config) {
  const int started_here = std::getenv("RANK") != nullptr ? 1 : config.world_size();
  return PositiveFromEnvironment(
      "LOCAL_WORLD_SIZE",
      PositiveFromEnvironment("OMPI_COMM_WORLD_LOCAL_SIZE", started_here));
}

absl::Status CheckDevicesAvailable(const TrainingConfig& config, int local_ranks) {
  if (!NeedsCuda(config)) return absl::OkStatus();
  absl::StatusOr<const CudaSupport*> support = LoadCudaSupport();
  if (!support.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        CudaField(config), ": ", CudaValue(config),
        " needs a GPU and LibTorch's CUDA libraries; ", support.status().message()));
  }
  const int gpus = (*support)->VisibleDeviceCount();
  if (gpus == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        CudaField(config), ": ", CudaValue(config),
        " needs a GPU, and none is visible here (CUDA reports 0 devices; "
        "CUDA_VISIBLE_DEVICES=",
        std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES")
                                            : "(unset)",
        "); use device: \"cpu\" with backend: \"gloo\""));
  }
  if (config.backend() == "nccl" && local_ranks > gpus) {
    return absl::InvalidArgumentError(absl::StrCat(
        "backend: nccl puts each rank on its own GPU (NCCL refuses two ranks "
        "on one GPU), and this machine runs ",
        local_ranks, " ranks on ", gpus,
        " visible GPU(s); use backend: \"gloo\" (ranks may share a GPU) or "
        "fewer ranks per machine"));
  }
  // Over Gloo, ranks may share GPUs (RankDevice).
  return absl::OkStatus();
}

c10::Device RankDevice(const TrainingConfig& config, int local_rank) {
  if (config.device() != "cuda") return c10::Device(c10::DeviceType::CPU);
  const CudaSupport* support = LoadedCudaSupport();
  const int gpus = support != nullptr ? support->VisibleDeviceCount() : 0;
  const int index = gpus > 0 ? local_rank % gpus : 0;
  if (support != nullptr) support->SetCurrentDevice(index);
  return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace receipt_parity
