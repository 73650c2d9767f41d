#include "collectives/gloo_process_group.h"

#include <cstdlib>
#include <mutex>
#include <utility>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

namespace receipt_parity {
namespace {

// Before the first group of this process reads it (once, at the flight
// recorder's construction); concurrent callers wait here.
void TurnOffFlightRecorderUnlessAsked() {
  static std::once_flag once;
  std::call_once(once, [] { setenv("TORCH_FR_BUFFER_SIZE", "0", /*overwrite=*/0); });
}

}  // namespace

c10::intrusive_ptr<c10d::ProcessGroup> MakeGlooProcessGroup(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
    std::chrono::milliseconds timeout,
    std::shared_ptr<::gloo::transport::Device> device) {
  TurnOffFlightRecorderUnlessAsked();
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(std::move(device));
  auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank,
                                                          world_size, options);
  auto group = c10::make_intrusive<c10d::ProcessGroup>(store, rank, world_size);
  group->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  for (c10::DeviceType device_type : {c10::DeviceType::CPU, c10::DeviceType::CUDA}) {
    group->setBackend(device_type, c10d::ProcessGroup::BackendType::GLOO, gloo);
  }
  return group;
}

}  // namespace receipt_parity
