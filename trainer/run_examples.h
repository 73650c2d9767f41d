// A run's examples as the update loop and the validation use them, and the
// one decision of how their pixels are held: all in memory, or rendered
// when a slot needs them from a compact index (issue 29's million
// receipts). Both give the same examples bitwise (the data hash, the
// trained parameters and every artifact are the same); only memory and
// time differ (docs/data.md).
// Internal to //trainer:training_run.
#ifndef RECEIPT_PARITY_TRAINER_RUN_EXAMPLES_H_
#define RECEIPT_PARITY_TRAINER_RUN_EXAMPLES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/data_config.pb.h"
#include "data/example_source.h"
#include "data/receipt_dataset.h"

namespace receipt_parity {

enum class ExamplePixels {
  kInMemory,          // InMemoryExamples: every pixel made at the start
  kRenderedOnDemand,  // SyntheticExampleSource over LoadReceipts' index
};

// Above this many synthetic identities a run renders its pixels on demand
// (train --render_pixels_above).
inline constexpr int64_t kRenderPixelsAbove = 200000;
// The training examples' pixel cache of a rank that renders them
// (train --pixel_cache_mib).
inline constexpr int64_t kPixelCacheBytes = int64_t{64} << 20;

// kRenderedOnDemand for synthetic data of more than `render_above`
// identities (0: always), kInMemory otherwise; a manifest's images are
// always read whole.
ExamplePixels ChooseExamplePixels(const DataConfig& data, int64_t render_above);

// How LoadReceipts loads the data for `pixels`.
PixelLoading LoadingFor(ExamplePixels pixels);

// "in_memory" or "rendered_on_demand": run_summary.json's
// data_pixels.
std::string ExamplePixelsName(ExamplePixels pixels);

struct RunData {
  std::unique_ptr<ExampleSource> train;
  std::unique_ptr<ExampleSource> validation;
  std::vector<std::string> train_ids;  // by dataset index
  std::vector<int> train_labels;       // by dataset index
  std::vector<std::string> validation_ids;
};

// The run's examples from `split` (loaded with LoadingFor(pixels)); with
// kRenderedOnDemand the training examples keep the last `cache_bytes` of
// rendered pixels and the validation's none (a pass selects each once).
// Errors: Internal (LibTorch making the tensors).
absl::StatusOr<RunData> MakeRunData(const ReceiptSplit& split, const DataConfig& data,
                                    ExamplePixels pixels, int64_t cache_bytes);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_RUN_EXAMPLES_H_
