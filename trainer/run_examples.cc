#include "trainer/run_examples.h"

#include <exception>
#include <utility>

#include "collectives/collective_error.h"
#include "data/receipt_tensors.h"
#include "data/synthetic_example_source.h"

namespace receipt_parity {

ExamplePixels ChooseExamplePixels(const DataConfig& data, int64_t render_above) {
  if (!data.has_synthetic()) return ExamplePixels::kInMemory;
  return data.synthetic().num_identities() > render_above ? ExamplePixels::kRenderedOnDemand
                                                          : ExamplePixels::kInMemory;
}

PixelLoading LoadingFor(ExamplePixels pixels) {
  return pixels == ExamplePixels::kInMemory ? PixelLoading::kLoad : PixelLoading::kIndexOnly;
}

std::string ExamplePixelsName(ExamplePixels pixels) {
  return pixels == ExamplePixels::kInMemory ? "in_memory" : "rendered_on_demand";
}

absl::StatusOr<RunData> MakeRunData(const ReceiptSplit& split, const DataConfig& data,
                                    ExamplePixels pixels, int64_t cache_bytes) {
  RunData run_data;
  run_data.train_ids.reserve(split.train.size());
  run_data.train_labels.reserve(split.train.size());
  run_data.validation_ids.reserve(split.validation.size());
  for (const ReceiptExample& e : split.train) {
    run_data.train_ids.push_back(e.receipt_id);
    run_data.train_labels.push_back(e.label);
  }
  for (const ReceiptExample& e : split.validation) {
    run_data.validation_ids.push_back(e.receipt_id);
  }
  if (pixels == ExamplePixels::kRenderedOnDemand) {
    const SyntheticRendering rendering = SyntheticRenderingOf(data);
    run_data.train = std::make_unique<SyntheticExampleSource>(
        SyntheticIndexOf(split.train), rendering,
        CacheExamplesIn(cache_bytes, rendering.image_size));
    run_data.validation = std::make_unique<SyntheticExampleSource>(
        SyntheticIndexOf(split.validation), rendering, /*cache_examples=*/0);
    return run_data;
  }
  try {
    run_data.train = std::make_unique<InMemoryExamples>(ToTensors(split.train, split.image_size));
    run_data.validation =
        std::make_unique<InMemoryExamples>(ToTensors(split.validation, split.image_size));
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "receipts as tensors: LibTorch");
  }
  return run_data;
}

}  // namespace receipt_parity
