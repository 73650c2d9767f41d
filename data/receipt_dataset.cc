#include "data/receipt_dataset.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "data/augmentation.h"
#include "data/identity_split.h"
#include "data/label_map.h"
#include "data/receipt_identity.h"
#include "data/receipt_manifest.h"
#include "data/synthetic_receipts.h"

namespace receipt_parity {
namespace {

// "about 3.2 GB" of `bytes`.
std::string Gigabytes(int64_t bytes) { return absl::StrFormat("about %.1f GB", bytes / 1e9); }

absl::StatusOr<std::vector<ReceiptIdentity>> LoadIdentities(
    const DataConfig& config, int image_size, PixelLoading pixels, int64_t limit) {
  if (config.source_case() == DataConfig::kSynthetic) {
    // Its size was checked with the config (ValidateDataFitsInMemory).
    if (pixels == PixelLoading::kIndexOnly) return SyntheticReceiptIndex(config.synthetic());
    return GenerateSyntheticReceipts(config.synthetic(), image_size);
  }
  if (pixels == PixelLoading::kIndexOnly) {
    return absl::InvalidArgumentError(
        "data.manifest_path: a manifest's images are read whole; rendering pixels on demand is "
        "for data.synthetic only");
  }
  // Each row a capture, each training one possibly augmented into more views.
  const int64_t per_row = HeldPixelBytes(std::max(1, config.views_per_identity()), image_size);
  const int64_t max_rows = limit < 0 ? -1 : limit / per_row;
  absl::StatusOr<std::vector<ReceiptIdentity>> identities =
      LoadReceiptManifest(config.manifest_path(), image_size, max_rows);
  if (absl::IsResourceExhausted(identities.status())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.manifest_path: ", identities.status().message(), " (", Gigabytes(per_row),
        " held per row at views_per_identity ", std::max(1, config.views_per_identity()),
        "; this process has ", Gigabytes(limit), " available)"));
  }
  if (!identities.ok()) {
    // The config's loader puts the line of data.manifest_path in front.
    return absl::Status(identities.status().code(),
                        absl::StrCat("data.manifest_path: ",
                                     identities.status().message()));
  }
  return identities;
}

}  // namespace

int64_t HeldPixelBytes(int64_t examples, int image_size) {
  return examples * image_size * image_size * static_cast<int64_t>(sizeof(float)) *
         kHeldPixelCopies;
}

absl::StatusOr<ReceiptSplit> LoadReceipts(const DataConfig& as_given, PixelLoading pixels,
                                          int64_t held_bytes_limit) {
  if (absl::Status valid = ValidateDataConfig(as_given); !valid.ok()) {
    return valid;
  }
  DataConfig config = as_given;
  ApplyDataDefaults(&config);
  ReceiptSplit split;
  split.image_size = config.image_size();
  split.train_class_counts.assign(kNumLabels, 0);
  absl::StatusOr<std::vector<ReceiptIdentity>> identities =
      LoadIdentities(config, split.image_size, pixels, held_bytes_limit);
  if (!identities.ok()) return identities.status();

  const IdentitySplit sides = SplitIdentities(
      *identities, config.validation_fraction(), config.split_seed());
  const int wanted_views = config.views_per_identity();
  // Reserved whole: a growing vector holds its old and new arrays at once.
  size_t train_examples = 0;
  for (int index : sides.train) {
    const size_t captures = std::max<size_t>(1, (*identities)[index].captures.size());
    train_examples += std::max<size_t>(captures, wanted_views);
  }
  split.train.reserve(train_examples);
  split.validation.reserve(sides.validation.size());
  for (int index : sides.train) {
    const ReceiptIdentity& identity = (*identities)[index];
    // An index-only synthetic identity has no capture made, and one capture.
    const bool rendered = !identity.captures.empty();
    const int captures = rendered ? static_cast<int>(identity.captures.size()) : 1;
    const int views = std::max(captures, wanted_views);
    for (int view = 0; view < views; ++view) {
      ReceiptExample example{identity.receipt_id, identity.label, view, {}, index};
      if (rendered) {
        example.pixels =
            view < captures
                ? identity.captures[view]
                : AugmentView(identity.captures[view % captures],
                              split.image_size, config.augmentation_seed(),
                              identity.receipt_id, view);
      }
      split.train.push_back(std::move(example));
    }
    split.train_class_counts[identity.label] += views;
  }
  for (int index : sides.validation) {
    ReceiptIdentity& identity = (*identities)[index];
    split.validation.push_back(ReceiptExample{
        identity.receipt_id, identity.label, 0,
        identity.captures.empty() ? GrayPixels() : std::move(identity.captures.front()), index});
  }
  return split;
}

}  // namespace receipt_parity
