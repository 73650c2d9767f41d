// run_manifest.json: what a run trained, and on what (see run_manifest.proto).
#ifndef RECEIPT_PARITY_ARTIFACTS_RUN_MANIFEST_H_
#define RECEIPT_PARITY_ARTIFACTS_RUN_MANIFEST_H_

#include <string>

#include "absl/status/statusor.h"
#include "data/example_source.h"
#include "data/receipt_dataset.h"
#include "model/classifier.h"
#include "artifacts/run_manifest.pb.h"
#include "config/config_loader.h"

namespace receipt_parity {

// Everything but accepted_examples_per_update and updates, which the loop
// adds as it runs.
RunManifest MakeRunManifest(const LoadedConfig& loaded, const Classifier& model,
                            const ReceiptSplit& data, int world_size);

// SHA-1 of every example's id, label, view and pixels, train then
// validation: ranks compare it to prove they train on the same data.
// Streamed: the pixels come from `train` and `validation` (the sources of
// data.train and data.validation, on the CPU) a chunk at a time, so the
// hash holds no copy of the data and is the same whichever source holds or
// renders them. Errors: those of the sources' Select(), and Internal when a
// source's size is not its part's.
absl::StatusOr<std::string> DataHash(const ReceiptSplit& data, const ExampleSource& train,
                                     const ExampleSource& validation);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_ARTIFACTS_RUN_MANIFEST_H_
