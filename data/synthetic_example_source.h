// Synthetic receipts rendered when a slot needs them (issue 29's million
// receipts): an ExampleSource (data/example_source.h) that keeps a compact
// index per example, not its pixels, and renders a selected example's
// capture (RenderSyntheticReceipt) and, for a view past the first, its
// augmentation (AugmentView) as LoadReceipts does, bitwise: the same
// pixels, labels and keys as InMemoryExamples over LoadReceipts' tensors.
// The last `cache_examples` rendered examples are kept (least recently
// selected first out).
//
// Not used by the trainer yet: loading, hashing and splitting still make
// every pixel at the start of a run (docs/data.md).
//
// Thread safety: Select() from one thread at a time (it fills the cache).
#ifndef RECEIPT_PARITY_DATA_SYNTHETIC_EXAMPLE_SOURCE_H_
#define RECEIPT_PARITY_DATA_SYNTHETIC_EXAMPLE_SOURCE_H_

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "data/example_source.h"
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

class SyntheticExampleSource : public ExampleSource {
 public:
  // REQUIRES: cache_examples >= 0; every entry's label valid and view >= 0.
  SyntheticExampleSource(std::vector<SyntheticExampleEntry> index, SyntheticRendering rendering,
                         int64_t cache_examples);

  int64_t size() const override { return static_cast<int64_t>(index_.size()); }
  absl::StatusOr<ExampleTensors> Select(absl::Span<const Slot> slots) const override;

  // Examples rendered so far (cache misses), and those the cache served.
  int64_t rendered() const { return rendered_; }
  int64_t cache_hits() const { return hits_; }

 private:
  const GrayPixels& PixelsOf(int64_t index) const;

  std::vector<SyntheticExampleEntry> index_;
  SyntheticRendering rendering_;
  int64_t cache_examples_;
  // Most recently selected first.
  mutable std::list<std::pair<int64_t, GrayPixels>> cache_;
  mutable std::unordered_map<int64_t, std::list<std::pair<int64_t, GrayPixels>>::iterator>
      cached_;
  mutable int64_t rendered_ = 0;
  mutable int64_t hits_ = 0;
  // With no cache: the one example being copied.
  mutable GrayPixels scratch_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DATA_SYNTHETIC_EXAMPLE_SOURCE_H_
