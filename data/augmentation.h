// Training views of a receipt capture, made AFTER the identity split.
//
// View 0 is the capture itself, unchanged. A view v > 0 is the capture
//   1. translated by (dx, dy), each in [-MaxTranslation, MaxTranslation],
//      edge pixels replicated into the uncovered border;
//   2. contrast-scaled about its mean by a factor in [0.9, 1.1] and shifted in
//      brightness by [-0.05, 0.05];
//   3. given noise of standard deviation 0.015; then clamped into [0, 1].
// The jitter is small enough to keep the quality class (a faded capture
// stays low-contrast, an ok one never reaches an edge: see
// SyntheticMargin()). The random stream is seeded by
// (augmentation_seed, receipt_id, view) only, so a view never depends on
// which other identities exist or in which order they are processed.
// Thread safety: pure functions.
#ifndef RECEIPT_PARITY_DATA_AUGMENTATION_H_
#define RECEIPT_PARITY_DATA_AUGMENTATION_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "data/receipt_identity.h"

namespace receipt_parity {

// The largest shift, in pixels, of an augmented view: max(1, image_size/32).
int MaxTranslation(int image_size);

// View `view` of `capture`. REQUIRES: capture.size() ==
// image_size * image_size, view >= 0.
GrayPixels AugmentView(const GrayPixels& capture, int image_size,
                       uint64_t augmentation_seed, absl::string_view receipt_id,
                       int view);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DATA_AUGMENTATION_H_
