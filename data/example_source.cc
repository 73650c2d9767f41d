#include "data/example_source.h"

#include <exception>

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
