#include "data/synthetic_example_source.h"

#include <algorithm>
#include <exception>
#include <utility>

#include <ATen/ATen.h>

#include "collectives/collective_error.h"
#include "data/augmentation.h"
#include "data/data_config.h"
#include "data/synthetic_receipts.h"

namespace receipt_parity {
namespace {

GrayPixels Render(const SyntheticExampleEntry& entry, const SyntheticRendering& r) {
  GrayPixels capture = RenderSyntheticReceipt(r.seed, entry.identity, entry.label, r.image_size);
  if (entry.view == 0) return capture;
  return AugmentView(capture, r.image_size, r.augmentation_seed,
                     SyntheticReceiptId(entry.identity), entry.view);
}

// A cached example beside its pixels: its slot's index and links.
constexpr int64_t kCacheEntryOverheadBytes = 16;

}  // namespace

SyntheticRendering SyntheticRenderingOf(const DataConfig& as_given) {
  DataConfig config = as_given;
  ApplyDataDefaults(&config);
  return {config.synthetic().seed(), config.image_size(), config.augmentation_seed()};
}

std::vector<SyntheticExampleEntry> SyntheticIndexOf(const std::vector<ReceiptExample>& examples) {
  std::vector<SyntheticExampleEntry> index;
  index.reserve(examples.size());
  for (const ReceiptExample& e : examples) {
    index.push_back({e.identity_index, static_cast<int16_t>(e.view), static_cast<int8_t>(e.label)});
  }
  return index;
}

int64_t CacheExamplesIn(int64_t cache_bytes, int image_size) {
  const int64_t per_example =
      int64_t{image_size} * image_size * static_cast<int64_t>(sizeof(float)) +
      kCacheEntryOverheadBytes;
  return std::clamp<int64_t>(cache_bytes / per_example, 0, (int64_t{1} << 31) - 1);
}

SyntheticExampleSource::SyntheticExampleSource(std::vector<SyntheticExampleEntry> index,
                                               SyntheticRendering rendering,
                                               int64_t cache_examples)
    : index_(std::move(index)),
      rendering_(rendering),
      cache_examples_(static_cast<int32_t>(
          std::min<int64_t>(cache_examples, static_cast<int64_t>(index_.size())))) {}

void SyntheticExampleSource::MoveToFront(int32_t slot, bool linked) const {
  if (linked) {
    if (slot == head_) return;
    next_[previous_[slot]] = next_[slot];
    if (slot == tail_) {
      tail_ = previous_[slot];
    } else {
      previous_[next_[slot]] = previous_[slot];
    }
  }
  previous_[slot] = -1;
  next_[slot] = head_;
  if (head_ >= 0) previous_[head_] = slot;
  head_ = slot;
  if (tail_ < 0) tail_ = slot;
}

const float* SyntheticExampleSource::PixelsOf(int64_t index) const {
  const int64_t pixels = int64_t{rendering_.image_size} * rendering_.image_size;
  if (cache_examples_ == 0) {
    ++rendered_;
    scratch_ = Render(index_[index], rendering_);
    return scratch_.data();
  }
  if (slab_.empty()) {
    slab_.resize(static_cast<size_t>(cache_examples_) * pixels);
    slot_of_.assign(index_.size(), -1);
    cached_index_.assign(cache_examples_, -1);
    previous_.assign(cache_examples_, -1);
    next_.assign(cache_examples_, -1);
  }
  if (const int32_t slot = slot_of_[index]; slot >= 0) {
    ++hits_;
    MoveToFront(slot, /*linked=*/true);
    return slab_.data() + slot * pixels;
  }
  ++rendered_;
  int32_t slot = slots_used_;
  bool linked = false;
  if (slots_used_ < cache_examples_) {
    ++slots_used_;
  } else {
    slot = tail_;  // the least recently selected goes
    slot_of_[cached_index_[slot]] = -1;
    linked = true;
  }
  const GrayPixels rendered = Render(index_[index], rendering_);
  std::copy(rendered.begin(), rendered.end(), slab_.begin() + slot * pixels);
  cached_index_[slot] = index;
  slot_of_[index] = slot;
  MoveToFront(slot, linked);
  return slab_.data() + slot * pixels;
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
      const float* p = PixelsOf(slots[i].dataset_index);
      std::copy(p, p + pixels, image + i * pixels);
      label[i] = entry.label;
      key[i] = ExampleKey(SyntheticReceiptId(entry.identity), entry.view);
    }
    if (!device_.is_cpu()) {
      out.images = out.images.to(device_);
      out.labels = out.labels.to(device_);
    }
    return out;
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "rendering the slots' receipts: LibTorch");
  }
}

absl::StatusOr<std::vector<int64_t>> SyntheticExampleSource::SelectKeys(
    absl::Span<const Slot> slots) const {
  if (absl::Status s = CheckSlotsIn(slots, size()); !s.ok()) return s;
  std::vector<int64_t> keys;
  keys.reserve(slots.size());
  for (const Slot& slot : slots) {
    const SyntheticExampleEntry& entry = index_[slot.dataset_index];
    keys.push_back(ExampleKey(SyntheticReceiptId(entry.identity), entry.view));
  }
  return keys;
}

absl::Status SyntheticExampleSource::MoveTo(const c10::Device& device) {
  device_ = device;
  return absl::OkStatus();
}

}  // namespace receipt_parity
