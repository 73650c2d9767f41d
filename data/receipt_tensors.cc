#include "data/receipt_tensors.h"

#include <ATen/ATen.h>

namespace receipt_parity {

ExampleTensors ToTensors(const std::vector<ReceiptExample>& examples,
                         int image_size) {
  const int64_t n = static_cast<int64_t>(examples.size());
  const int64_t pixels = int64_t{image_size} * image_size;
  ExampleTensors out;
  out.images = at::empty({n, 1, image_size, image_size}, at::kFloat);
  out.labels = at::empty({n}, at::kLong);
  float* image_data = out.images.data_ptr<float>();
  int64_t* label_data = out.labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    std::copy(examples[i].pixels.begin(), examples[i].pixels.end(),
              image_data + i * pixels);
    label_data[i] = examples[i].label;
  }
  return out;
}

ExampleTensors SelectSlots(const ExampleTensors& all,
                           absl::Span<const Slot> slots) {
  std::vector<int64_t> rows;
  rows.reserve(slots.size());
  for (const Slot& slot : slots) rows.push_back(slot.dataset_index);
  at::Tensor index = at::tensor(rows, at::kLong).to(all.images.device());
  return {all.images.index_select(0, index), all.labels.index_select(0, index)};
}

}  // namespace receipt_parity
