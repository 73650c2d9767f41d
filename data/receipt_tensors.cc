#include "data/receipt_tensors.h"

#include <ATen/ATen.h>

#include "data/random_stream.h"

namespace receipt_parity {

int64_t ExampleKey(absl::string_view receipt_id, int view) {
  return static_cast<int64_t>(MixSeed(HashString(receipt_id), static_cast<uint64_t>(view)));
}

int64_t ExampleKey(const ReceiptExample& example) {
  return ExampleKey(example.receipt_id, example.view);
}

ExampleTensors ToTensors(const std::vector<ReceiptExample>& examples,
                         int image_size) {
  const int64_t n = static_cast<int64_t>(examples.size());
  const int64_t pixels = int64_t{image_size} * image_size;
  ExampleTensors out;
  out.images = at::empty({n, 1, image_size, image_size}, at::kFloat);
  out.labels = at::empty({n}, at::kLong);
  out.keys = at::empty({n}, at::kLong);
  float* image_data = out.images.data_ptr<float>();
  int64_t* label_data = out.labels.data_ptr<int64_t>();
  int64_t* key_data = out.keys.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    std::copy(examples[i].pixels.begin(), examples[i].pixels.end(),
              image_data + i * pixels);
    label_data[i] = examples[i].label;
    key_data[i] = ExampleKey(examples[i]);
  }
  return out;
}

ExampleTensors SelectSlots(const ExampleTensors& all,
                           absl::Span<const Slot> slots) {
  std::vector<int64_t> rows;
  rows.reserve(slots.size());
  for (const Slot& slot : slots) rows.push_back(slot.dataset_index);
  const at::Tensor cpu_index = at::tensor(rows, at::kLong);
  const at::Tensor index = cpu_index.to(all.images.device());
  return {all.images.index_select(0, index), all.labels.index_select(0, index),
          all.keys.defined() ? all.keys.index_select(0, cpu_index) : at::Tensor()};
}

}  // namespace receipt_parity
