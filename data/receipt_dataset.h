// The receipt data a training run uses: identities split into train and
// validation BEFORE augmentation, training identities expanded into views.
//
// Source: data.synthetic (data/synthetic_receipts.h) or data.manifest_path
// (data/receipt_manifest.h). Steps:
//   1. load the identities (one capture each when synthetic; one per
//      manifest row when from a manifest);
//   2. split them by identity (data/identity_split.h, split_seed,
//      validation_fraction), stratified by class;
//   3. training identity with c captures and V = views_per_identity
//      (defaults: data/data_config.h) gets max(c, V) views, grouped by identity in identity
//      order: view v < c is capture v unchanged (view 0 is the first capture),
//      view v >= c is AugmentView(capture v % c, ..., view v)
//      (data/augmentation.h). Synthetic identities have c = 1, so they get
//      exactly V views; a manifest identity keeps all its captures and is
//      augmented only when V exceeds its capture count.
//   4. a validation identity contributes its first capture, unchanged.
// The same DataConfig gives byte-identical pixels; nothing depends on time,
// threads or the standard library's distributions.
// Thread safety: pure functions (LoadReceipts reads files for a manifest).
#ifndef RECEIPT_PARITY_DATA_RECEIPT_DATASET_H_
#define RECEIPT_PARITY_DATA_RECEIPT_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/data_config.h"

namespace receipt_parity {

struct ReceiptExample {
  std::string receipt_id;     // identity; several training views share it
  int label = 0;              // an id of data/label_map.h
  int view = 0;               // 0 = the first capture itself; see step 3
  // image_size * image_size, row-major, in [0, 1]; empty when loaded with
  // PixelLoading::kIndexOnly.
  std::vector<float> pixels;
  // The identity's place in load order: synthetic identity i is i.
  int identity_index = 0;
};

// Whether LoadReceipts makes the pixels. kIndexOnly (synthetic receipts
// only) makes every example's id, label, view and identity_index and no
// pixel: the examples of the same split, in the same order, whose pixels a
// SyntheticExampleSource (data/synthetic_example_source.h) renders when a
// slot needs them.
enum class PixelLoading { kLoad, kIndexOnly };

struct ReceiptSplit {
  int image_size = 0;
  // Training identities x their views, grouped by identity (see step 3).
  std::vector<ReceiptExample> train;
  // One capture (view 0, no augmentation) per validation identity.
  std::vector<ReceiptExample> validation;
  // Per label id (kNumLabels entries), over `train`.
  std::vector<int64_t> train_class_counts;
};

// Loads, splits and augments as described above, `config` with its
// defaults (ApplyDataDefaults). Errors: those of ValidateDataConfig
// (data/data_config.h), GenerateSyntheticReceipts and LoadReceiptManifest,
// the last with "data.manifest_path: " in front (so that a config's loader
// names the line of the field: "data.manifest_path: cannot read receipt
// manifest: PATH: no such file", "data.manifest_path: PATH:LINE: ...").
// A relative manifest_path is opened against the working directory: a
// training config's loader resolves it against the config's folder first
// (config/config_paths.h). With kIndexOnly a manifest config is refused
// (InvalidArgument naming data.manifest_path): its pixels are in files.
//
// With `held_bytes_limit` >= 0 (a rank's available memory), a manifest
// whose pixels would take more than that held (HeldPixelBytes of its rows)
// is refused before any image is read: InvalidArgument naming
// data.manifest_path, the manifest, its row count and both figures. (A
// synthetic config's size is checked with the config,
// ValidateDataFitsInMemory.)
absl::StatusOr<ReceiptSplit> LoadReceipts(const DataConfig& config,
                                          PixelLoading pixels = PixelLoading::kLoad,
                                          int64_t held_bytes_limit = -1);

// What holding `examples` examples of `image_size` pixels takes at its peak:
// their captures, the split's copies and the tensors made from them
// (kHeldPixelCopies), 4 bytes a pixel.
inline constexpr int kHeldPixelCopies = 3;
int64_t HeldPixelBytes(int64_t examples, int image_size);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DATA_RECEIPT_DATASET_H_
