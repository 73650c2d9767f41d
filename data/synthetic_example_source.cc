#include "data/synthetic_example_source.h"

#include <algorithm>
#include <exception>
#include <utility>

#include <ATen/ATen.h>

#include "collectives/collective_error.h"
#include "data/augmentation.h"
#include "data/synthetic_receipts.h"

namespace receipt_parity {
namespace {

GrayPixels Render(const SyntheticExampleEntry& entry, const SyntheticRendering& r) {
  GrayPixels capture = RenderSyntheticReceipt(r.seed, entry.identity, entry.label, r.image_size);
  if (entry.view == 0) return capture;
  return AugmentView(capture, r.image_size, r.augmentation_seed,
                     SyntheticReceiptId(entry.identity), entry.view);
}

}  // namespace

SyntheticExampleSource::SyntheticExampleSource(std::vector<SyntheticExampleEntry> index,
                                               SyntheticRendering rendering,
                                               int64_t cache_examples)
    : index_(std::move(index)), rendering_(rendering), cache_examples_(cache_examples) {}

const GrayPixels& SyntheticExampleSource::PixelsOf(int64_t index) const {
  if (auto it = cached_.find(index); it != cached_.end()) {
    ++hits_;
    cache_.splice(cache_.begin(), cache_, it->second);
    return it->second->second;
  }
  ++rendered_;
  if (cache_examples_ == 0) {
    scratch_ = Render(index_[index], rendering_);
    return scratch_;
  }
  if (static_cast<int64_t>(cache_.size()) >= cache_examples_) {
    cached_.erase(cache_.back().first);
    cache_.pop_back();
  }
  cache_.emplace_front(index, Render(index_[index], rendering_));
  cached_[index] = cache_.begin();
  return cache_.front().second;
}

absl::StatusOr<ExampleTensors> SyntheticExampleSource::Select(
    absl::Span<const Slot> slots) const {
  const int side = rendering_.image_size;
  const int64_t pixels = int64_t{side} * side;
  const auto n = static_cast<int64_t>(slots.size());
  if (absl::Status s = CheckSlotsIn(slots, size()); !s.ok()) return s;
  try {
    ExampleTensors out;
    out.images = at::empty({n, 1, side, side}, at::kFloat);
    out.labels = at::empty({n}, at::kLong);
    out.keys = at::empty({n}, at::kLong);
    float* image = out.images.data_ptr<float>();
    int64_t* label = out.labels.data_ptr<int64_t>();
    int64_t* key = out.keys.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      const SyntheticExampleEntry& entry = index_[slots[i].dataset_index];
      const GrayPixels& p = PixelsOf(slots[i].dataset_index);
      std::copy(p.begin(), p.end(), image + i * pixels);
      label[i] = entry.label;
      key[i] = ExampleKey(SyntheticReceiptId(entry.identity), entry.view);
    }
    return out;
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "rendering the slots' receipts: LibTorch");
  }
}

}  // namespace receipt_parity
