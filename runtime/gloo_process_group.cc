#include "runtime/gloo_process_group.h"

#include <utility>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

namespace receipt_parity {

c10::intrusive_ptr<c10d::ProcessGroup> MakeGlooProcessGroup(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
    std::chrono::milliseconds timeout,
    std::shared_ptr<::gloo::transport::Device> device) {
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
