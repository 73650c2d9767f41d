#include "data/receipt_dataset.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "data/augmentation.h"
#include "data/identity_split.h"
#include "data/label_map.h"
#include "data/receipt_identity.h"
#include "data/receipt_manifest.h"
#include "data/synthetic_receipts.h"

namespace receipt_parity {
namespace {

absl::StatusOr<std::vector<ReceiptIdentity>> LoadIdentities(
    const DataConfig& config, int image_size, PixelLoading pixels) {
  if (config.source_case() == DataConfig::kSynthetic) {
    return pixels == PixelLoading::kLoad
               ? GenerateSyntheticReceipts(config.synthetic(), image_size)
               : SyntheticReceiptIndex(config.synthetic());
  }
  if (pixels == PixelLoading::kIndexOnly) {
    return absl::InvalidArgumentError(
        "data.manifest_path: a manifest's images are read whole; rendering pixels on demand is "
        "for data.synthetic only");
  }
  absl::StatusOr<std::vector<ReceiptIdentity>> identities =
      LoadReceiptManifest(config.manifest_path(), image_size);
  if (!identities.ok()) {
    // The config's loader puts the line of data.manifest_path in front.
    return absl::Status(identities.status().code(),
                        absl::StrCat("data.manifest_path: ",
                                     identities.status().message()));
  }
  return identities;
}

}  // namespace

absl::StatusOr<ReceiptSplit> LoadReceipts(const DataConfig& as_given, PixelLoading pixels) {
  if (absl::Status valid = ValidateDataConfig(as_given); !valid.ok()) {
    return valid;
  }
  DataConfig config = as_given;
  ApplyDataDefaults(&config);
  ReceiptSplit split;
  split.image_size = config.image_size();
  split.train_class_counts.assign(kNumLabels, 0);
  absl::StatusOr<std::vector<ReceiptIdentity>> identities =
      LoadIdentities(config, split.image_size, pixels);
  if (!identities.ok()) return identities.status();

  const IdentitySplit sides = SplitIdentities(
      *identities, config.validation_fraction(), config.split_seed());
  const int wanted_views = config.views_per_identity();
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
