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

absl::Status FieldError(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat("data.", field, ": ", message));
}

absl::StatusOr<std::vector<ReceiptIdentity>> LoadIdentities(
    const DataConfig& config, int image_size) {
  if (config.source_case() == DataConfig::kSynthetic) {
    return GenerateSyntheticReceipts(config.synthetic(), image_size);
  }
  return LoadReceiptManifest(config.manifest_path(), image_size);
}

}  // namespace

int ResolvedImageSize(const DataConfig& config) {
  return config.image_size() == 0 ? kDefaultImageSize : config.image_size();
}

absl::Status ValidateDataConfig(const DataConfig& config) {
  switch (config.source_case()) {
    case DataConfig::kSynthetic:
      if (absl::Status s = ValidateSyntheticReceipts(config.synthetic());
          !s.ok()) {
        return s;
      }
      break;
    case DataConfig::kManifestPath:
      if (config.manifest_path().empty()) {
        return FieldError("manifest_path", "must not be empty");
      }
      break;
    case DataConfig::SOURCE_NOT_SET:
      return FieldError("source",
                        "set data.synthetic { ... } or data.manifest_path");
  }
  const int views = config.views_per_identity();
  if (views < 0 || views > kMaxViewsPerIdentity) {
    return FieldError("views_per_identity",
                      absl::StrCat("must be in [0, ", kMaxViewsPerIdentity,
                                   "] (0 means 1), got ", views));
  }
  const double fraction = config.validation_fraction();
  if (!(fraction >= 0.0 && fraction < 1.0)) {
    return FieldError("validation_fraction",
                      absl::StrCat("must be in [0, 1), got ", fraction));
  }
  const int size = config.image_size();
  if (size != 0 && (size < kMinImageSize || size > kMaxImageSize)) {
    return FieldError(
        "image_size",
        absl::StrCat("must be in [", kMinImageSize, ", ", kMaxImageSize,
                     "] (0 means ", kDefaultImageSize, "), got ", size));
  }
  return absl::OkStatus();
}

absl::StatusOr<ReceiptSplit> LoadReceipts(const DataConfig& config) {
  if (absl::Status valid = ValidateDataConfig(config); !valid.ok()) {
    return valid;
  }
  ReceiptSplit split;
  split.image_size = ResolvedImageSize(config);
  split.train_class_counts.assign(kNumLabels, 0);
  absl::StatusOr<std::vector<ReceiptIdentity>> identities =
      LoadIdentities(config, split.image_size);
  if (!identities.ok()) return identities.status();

  const IdentitySplit sides = SplitIdentities(
      *identities, config.validation_fraction(), config.split_seed());
  const int wanted_views = std::max(1, config.views_per_identity());
  for (int index : sides.train) {
    const ReceiptIdentity& identity = (*identities)[index];
    const int captures = static_cast<int>(identity.captures.size());
    const int views = std::max(captures, wanted_views);
    for (int view = 0; view < views; ++view) {
      ReceiptExample example{identity.receipt_id, identity.label, view, {}};
      example.pixels =
          view < captures
              ? identity.captures[view]
              : AugmentView(identity.captures[view % captures],
                            split.image_size, config.augmentation_seed(),
                            identity.receipt_id, view);
      split.train.push_back(std::move(example));
    }
    split.train_class_counts[identity.label] += views;
  }
  for (int index : sides.validation) {
    ReceiptIdentity& identity = (*identities)[index];
    split.validation.push_back(
        ReceiptExample{identity.receipt_id, identity.label, 0,
                       std::move(identity.captures.front())});
  }
  return split;
}

}  // namespace receipt_parity
