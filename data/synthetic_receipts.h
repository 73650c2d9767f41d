// A deterministic generator of synthetic receipt images: the embedded
// default data set (nothing is downloaded).
//
// Identity i is "rcpt-%06d" and is one receipt rendered as an
// image_size x image_size grayscale image: a light paper rectangle of varying
// size and position on a darker background, a header block, dark text lines
// of varying lengths (some with a right-aligned price) and a bold total line.
// Its quality class decides how the capture is spoiled:
//   ok       sharp, full contrast, the paper at least SyntheticMargin() pixels
//            inside every edge;
//   blurred  the same layout after two passes of a box blur of radius
//            ~image_size/16, so the 1-line text pattern is smeared away;
//   faded    contrast squeezed to 22-38 % and pulled toward a light level;
//   cropped  sharp, but 20-45 % of the paper runs off one image edge.
// The rare class is "cropped": identity i is cropped iff
// floor((i + 1) * f + phase) > floor(i * f + phase) for the configured
// fraction f and a seed-dependent phase, so any prefix of n identities holds
// round(n * f) +- 1 cropped ones. The other identities draw ok, blurred or
// faded uniformly. Identity i's label and pixels depend only on (seed, i,
// image_size), never on num_identities. All randomness is data/random_stream.h.
#ifndef RECEIPT_PARITY_DATA_SYNTHETIC_RECEIPTS_H_
#define RECEIPT_PARITY_DATA_SYNTHETIC_RECEIPTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/receipt_identity.h"
#include "data/data_config.pb.h"

namespace receipt_parity {

inline constexpr double kDefaultRareClassFraction = 0.04;
inline constexpr int kMinImageSize = 8;
inline constexpr int kMaxImageSize = 512;
inline constexpr int kMaxSyntheticIdentities = 1000000;

// "rcpt-000017" for 17.
std::string SyntheticReceiptId(int index);

// Pixels between an uncropped paper and the image edge, at least: larger than
// the augmentation's translation, so no augmented view of an uncropped
// receipt touches an edge.
int SyntheticMargin(int image_size);

// The label of identity `index`. REQUIRES: rare_fraction in (0, 0.5).
int SyntheticLabel(uint64_t seed, double rare_fraction, int index);

// Renders identity `index` with the given label.
// REQUIRES: image_size in [kMinImageSize, kMaxImageSize], label valid.
GrayPixels RenderSyntheticReceipt(uint64_t seed, int index, int label,
                                  int image_size);

// Checks `config` (found at data.synthetic of a TrainingConfig). Errors
// (InvalidArgument) name the field, e.g.
// "data.synthetic.num_identities: must be in [1, 1000000], got 0";
// rare_class_fraction must be in (0, 0.5), 0 meaning the default.
absl::Status ValidateSyntheticReceipts(const SyntheticReceipts& config);

// All identities 0..num_identities-1, one capture each. rare_class_fraction
// 0 means kDefaultRareClassFraction. Errors: those of
// ValidateSyntheticReceipts. REQUIRES: image_size in
// [kMinImageSize, kMaxImageSize].
absl::StatusOr<std::vector<ReceiptIdentity>> GenerateSyntheticReceipts(
    const SyntheticReceipts& config, int image_size);

// The same identities with their ids and labels and no capture made
// (captures empty). Errors: those of ValidateSyntheticReceipts.
absl::StatusOr<std::vector<ReceiptIdentity>> SyntheticReceiptIndex(
    const SyntheticReceipts& config);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DATA_SYNTHETIC_RECEIPTS_H_
