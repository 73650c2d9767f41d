// The data settings (DataConfig, data/data_config.proto): their defaults and
// their checks, neither of which reads a file. data/receipt_dataset.h loads
// what they describe.
//
// Defaults, defined here only: views_per_identity 0 means 1, image_size 0
// means kDefaultImageSize. A loaded training config has them applied once,
// by ApplyDataDefaults (trainer/config_loader.h); LoadReceipts resolves a
// DataConfig built in code the same way.
//
// Thread safety: pure functions.
#ifndef RECEIPT_PARITY_DATA_DATA_CONFIG_H_
#define RECEIPT_PARITY_DATA_DATA_CONFIG_H_

#include "absl/status/status.h"
#include "data/data_config.pb.h"

namespace receipt_parity {

inline constexpr int kDefaultImageSize = 32;
inline constexpr int kMaxViewsPerIdentity = 1000;

// Sets views_per_identity 0 to 1 and image_size 0 to kDefaultImageSize;
// other fields stay as they are. Idempotent.
void ApplyDataDefaults(DataConfig* config);

// The image size `config` asks for: image_size, or kDefaultImageSize when 0.
int ResolvedImageSize(const DataConfig& config);

// Checks the fields of `config` without reading any file. Errors
// (InvalidArgument) name the field, e.g.
// "data.validation_fraction: must be in [0, 1), got 1.5". Checked: the source
// is set; manifest_path is not empty; data.synthetic's fields;
// views_per_identity in [0, kMaxViewsPerIdentity]; validation_fraction in
// [0, 1); image_size 0 or in [kMinImageSize, kMaxImageSize].
absl::Status ValidateDataConfig(const DataConfig& config);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DATA_DATA_CONFIG_H_
