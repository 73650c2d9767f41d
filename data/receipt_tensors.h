// Receipt examples as tensors, and the rows of an update's slots.
#ifndef RECEIPT_PARITY_DATA_RECEIPT_TENSORS_H_
#define RECEIPT_PARITY_DATA_RECEIPT_TENSORS_H_

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "data/receipt_dataset.h"
#include "data/slot.h"

namespace receipt_parity {

struct ExampleTensors {
  at::Tensor images;  // [N, 1, S, S] float
  at::Tensor labels;  // [N] int64
  // [N] int64 on the CPU: each example's ExampleKey.
  at::Tensor keys;
};

// An example's key: MixSeed(HashString(receipt_id), view)
// (data/random_stream.h) as int64 bits. The same training view has the same
// key wherever it sits: keyed dropout (model/keyed_dropout.h) draws its mask
// from it.
int64_t ExampleKey(const ReceiptExample& example);
// The same of a view named by its receipt id and view number.
int64_t ExampleKey(absl::string_view receipt_id, int view);

// REQUIRES: every example has image_size^2 pixels.
ExampleTensors ToTensors(const std::vector<ReceiptExample>& examples,
                         int image_size);

// The rows of `slots` (masked slots included: they are computed and weigh
// zero), in slot order; keys stay on the CPU.
ExampleTensors SelectSlots(const ExampleTensors& all,
                           absl::Span<const Slot> slots);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DATA_RECEIPT_TENSORS_H_
