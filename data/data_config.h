// The data settings (DataConfig, data/data_config.proto): their defaults and
// their checks, neither of which reads a file. data/receipt_dataset.h loads
// what they describe.
//
// Defaults, defined here only: views_per_identity 0 means 1, image_size 0
// means kDefaultImageSize. A loaded training config has them applied once,
// by ApplyDataDefaults (config/config_loader.h); LoadReceipts resolves a
// DataConfig built in code the same way.
//
// Thread safety: pure functions.
#ifndef RECEIPT_PARITY_DATA_DATA_CONFIG_H_
#define RECEIPT_PARITY_DATA_DATA_CONFIG_H_

#include <cstdint>

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

// A synthetic source's example tensors (SyntheticTensorBytes) fit in
// DataMemoryLimitBytes(); the error (InvalidArgument) names
// data.synthetic.num_identities and says the figures. Allocates nothing.
// The config loader calls it last (config/config_loader.h, step 6).
// REQUIRES: ValidateDataConfig(config).ok().
absl::Status ValidateDataFitsInMemory(const DataConfig& config);

// Bytes of the example tensors (data/receipt_tensors.h) a synthetic
// source makes: num_identities x views slots (views 0 means 1), each
// image_size^2 float pixels and one int64 label; exact in int64 for every
// value ValidateDataConfig's range checks let through. 0 for a manifest
// (its size is not known before it is read).
int64_t SyntheticTensorBytes(const DataConfig& config);

// This machine's physical memory (sysconf(_SC_PHYS_PAGES) x
// sysconf(_SC_PAGESIZE)); INT64_MAX when the system does not say.
int64_t PhysicalMemoryBytes();

// The most bytes a dataset may take: half of the physical pages
// (PhysicalMemoryBytes); INT64_MAX when the system does not say.
int64_t DataMemoryLimitBytes();

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DATA_DATA_CONFIG_H_
