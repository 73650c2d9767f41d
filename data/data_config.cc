#include "data/data_config.h"

#include <unistd.h>

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "data/synthetic_receipts.h"

namespace receipt_parity {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat("data.", field, ": ", message));
}

absl::Status ValidateSource(const DataConfig& config) {
  switch (config.source_case()) {
    case DataConfig::kSynthetic:
      return ValidateSyntheticReceipts(config.synthetic());
    case DataConfig::kManifestPath:
      if (config.manifest_path().empty()) {
        return FieldError("manifest_path", "must not be empty");
      }
      return absl::OkStatus();
    case DataConfig::SOURCE_NOT_SET:
      break;
  }
  return FieldError("source", "set data.synthetic { ... } or data.manifest_path");
}

int ResolvedViews(const DataConfig& config) {
  return config.views_per_identity() == 0 ? 1 : config.views_per_identity();
}

}  // namespace

absl::Status ValidateDataFitsInMemory(const DataConfig& config) {
  const int64_t bytes = SyntheticTensorBytes(config);
  const int64_t limit = DataMemoryLimitBytes();
  if (bytes <= limit) return absl::OkStatus();
  const int size = ResolvedImageSize(config);
  return FieldError(
      "synthetic.num_identities",
      absl::StrCat(config.synthetic().num_identities(), " identities x ",
                   ResolvedViews(config), " views of ", size, "x", size,
                   " float pixels (plus an int64 label each) need ", bytes,
                   " bytes of example tensors, more than the limit of ", limit,
                   " bytes (half of this machine's physical memory)"));
}

int64_t SyntheticTensorBytes(const DataConfig& config) {
  if (config.source_case() != DataConfig::kSynthetic) return 0;
  const int64_t side = ResolvedImageSize(config);
  const int64_t bytes_per_slot = side * side * int64_t{sizeof(float)} + int64_t{sizeof(int64_t)};
  // At most 1e6 identities x 1000 views x (512^2 x 4 + 8) bytes < 2^61.
  return int64_t{config.synthetic().num_identities()} * ResolvedViews(config) *
         bytes_per_slot;
}

int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(pages) * page_size;
}

int64_t DataMemoryLimitBytes() {
  const long page_size = sysconf(_SC_PAGESIZE);
  const int64_t physical = PhysicalMemoryBytes();
  if (physical == std::numeric_limits<int64_t>::max()) return physical;
  return physical / page_size / 2 * page_size;  // half of the pages, as before
}

void ApplyDataDefaults(DataConfig* config) {
  if (config->views_per_identity() == 0) config->set_views_per_identity(1);
  if (config->image_size() == 0) config->set_image_size(kDefaultImageSize);
}

int ResolvedImageSize(const DataConfig& config) {
  return config.image_size() == 0 ? kDefaultImageSize : config.image_size();
}

absl::Status ValidateDataConfig(const DataConfig& config) {
  if (absl::Status s = ValidateSource(config); !s.ok()) return s;
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

}  // namespace receipt_parity
