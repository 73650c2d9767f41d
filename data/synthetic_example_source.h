// Synthetic receipts rendered when a slot needs them (issue 29's million
// receipts): an ExampleSource (data/example_source.h) that keeps a compact
// index per example, not its pixels, and renders a selected example's
// capture (RenderSyntheticReceipt) and, for a view past the first, its
// augmentation (AugmentView) as LoadReceipts does, bitwise: the same
// pixels, labels and keys as InMemoryExamples over LoadReceipts' tensors.
// The last `cache_examples` rendered examples are kept (least recently
// selected first out) in one slab allocated at the first render: a cached
// example costs its pixels and nothing is allocated per example, so the
// cache neither grows nor fragments the heap (a map node per example pinned
// each freed batch's block: 900 MB of heap after rendering 1 M examples of
// 16 x 16 through a 64 MB cache).
//
// The trainer uses it for synthetic data past a size
// (trainer/run_examples.h), its index made by LoadReceipts without pixels
// (PixelLoading::kIndexOnly).
//
// Thread safety: Select() from one thread at a time (it fills the cache).
#ifndef RECEIPT_PARITY_DATA_SYNTHETIC_EXAMPLE_SOURCE_H_
#define RECEIPT_PARITY_DATA_SYNTHETIC_EXAMPLE_SOURCE_H_

#include <cstdint>
#include <vector>

#include "data/data_config.pb.h"
#include "data/example_source.h"
#include "data/receipt_dataset.h"
#include "data/receipt_identity.h"

namespace receipt_parity {

// One example of the index: about 8 bytes.
struct SyntheticExampleEntry {
  int32_t identity = 0;  // synthetic identity i ("rcpt-%06d")
  int16_t view = 0;      // 0 = the capture itself
  int8_t label = 0;
};

struct SyntheticRendering {
  uint64_t seed = 0;               // data.synthetic.seed
  int image_size = 0;              // data.image_size
  uint64_t augmentation_seed = 0;  // data.augmentation_seed
};

// The rendering of a synthetic `config` (its defaults applied).
// REQUIRES: config.has_synthetic().
SyntheticRendering SyntheticRenderingOf(const DataConfig& config);

// The index of `examples` (LoadReceipts' train or validation of a
// synthetic config, with or without pixels).
std::vector<SyntheticExampleEntry> SyntheticIndexOf(const std::vector<ReceiptExample>& examples);

// How many examples of `image_size` fit in `cache_bytes`, their LRU links
// counted.
int64_t CacheExamplesIn(int64_t cache_bytes, int image_size);

class SyntheticExampleSource : public ExampleSource {
 public:
  // REQUIRES: 0 <= cache_examples < 2^31; every entry's label valid and
  // view >= 0.
  SyntheticExampleSource(std::vector<SyntheticExampleEntry> index, SyntheticRendering rendering,
                         int64_t cache_examples);

  int64_t size() const override { return static_cast<int64_t>(index_.size()); }
  absl::StatusOr<ExampleTensors> Select(absl::Span<const Slot> slots) const override;
  // From the index: renders nothing.
  absl::StatusOr<std::vector<int64_t>> SelectKeys(absl::Span<const Slot> slots) const override;
  // Later selections' images and labels are copied to `device`.
  absl::Status MoveTo(const c10::Device& device) override;

  // Examples rendered so far (cache misses), and those the cache served.
  int64_t rendered() const { return rendered_; }
  int64_t cache_hits() const { return hits_; }

 private:
  // The pixels of example `index`: in the cache's slab, or (no cache) in
  // scratch_, valid until the next call.
  const float* PixelsOf(int64_t index) const;
  // Cache slot `slot` to the front of the recency list (unlinked first when
  // `linked`).
  void MoveToFront(int32_t slot, bool linked) const;

  std::vector<SyntheticExampleEntry> index_;
  SyntheticRendering rendering_;
  int32_t cache_examples_;
  c10::Device device_ = c10::Device(c10::DeviceType::CPU);
  // The cache: slot s holds example cached_index_[s]'s pixels at
  // slab_[s * pixels]; slot_of_[i] is example i's slot or -1. Slots in use
  // are linked by previous_/next_, most recently selected (head_) first.
  mutable std::vector<float> slab_;
  mutable std::vector<int32_t> slot_of_;
  mutable std::vector<int64_t> cached_index_;
  mutable std::vector<int32_t> previous_;
  mutable std::vector<int32_t> next_;
  mutable int32_t head_ = -1;
  mutable int32_t tail_ = -1;
  mutable int32_t slots_used_ = 0;
  mutable int64_t rendered_ = 0;
  mutable int64_t hits_ = 0;
  // With no cache: the one example being copied.
  mutable GrayPixels scratch_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DATA_SYNTHETIC_EXAMPLE_SOURCE_H_
