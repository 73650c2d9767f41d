#include "data/example_source.h"

#include <exception>
#include <vector>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"

namespace receipt_parity {

absl::Status CheckSlotsIn(absl::Span<const Slot> slots, int64_t size) {
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].dataset_index < 0 || slots[i].dataset_index >= size) {
      return absl::InternalError(absl::StrCat("slot ", i, " names dataset index ",
                                              slots[i].dataset_index, ", not one of the ", size,
                                              " examples"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ExampleTensors> InMemoryExamples::Select(absl::Span<const Slot> slots) const {
  if (absl::Status s = CheckSlotsIn(slots, size()); !s.ok()) return s;
  try {
    return SelectSlots(all_, slots);
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "selecting the slots' examples: LibTorch");
  }
}

absl::StatusOr<std::vector<int64_t>> ExampleSource::SelectKeys(
    absl::Span<const Slot> slots) const {
  absl::StatusOr<ExampleTensors> selected = Select(slots);
  if (!selected.ok()) return selected.status();
  if (!selected->keys.defined()) return std::vector<int64_t>();
  try {
    return KeysOf(selected->keys, static_cast<int64_t>(slots.size()));
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "reading the slots' keys: LibTorch");
  }
}

std::vector<int64_t> KeysOf(const at::Tensor& keys, int64_t n) {
  if (!keys.defined()) return std::vector<int64_t>(static_cast<size_t>(n), 0);
  const at::Tensor flat = keys.to(at::kCPU).contiguous();
  const int64_t* data = flat.data_ptr<int64_t>();
  return std::vector<int64_t>(data, data + flat.numel());
}

absl::StatusOr<std::vector<int64_t>> InMemoryExamples::SelectKeys(
    absl::Span<const Slot> slots) const {
  if (absl::Status s = CheckSlotsIn(slots, size()); !s.ok()) return s;
  if (!all_.keys.defined()) return std::vector<int64_t>();
  std::vector<int64_t> keys(slots.size(), 0);
  try {
    const at::Tensor all = all_.keys.contiguous();
    const int64_t* data = all.data_ptr<int64_t>();
    for (size_t i = 0; i < slots.size(); ++i) keys[i] = data[slots[i].dataset_index];
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "reading the slots' keys: LibTorch");
  }
  return keys;
}

absl::Status InMemoryExamples::MoveTo(const c10::Device& device) {
  try {
    all_.images = all_.images.to(device);
    all_.labels = all_.labels.to(device);
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, absl::StrCat("moving the receipts to ", device.str(),
                                                 ": LibTorch"));
  }
  return absl::OkStatus();
}

}  // namespace receipt_parity
