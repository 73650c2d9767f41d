// The classifier a run trains: BuildClassifier (model/classifier.h), unless
// a test-only binary installed another builder. The seam lets an end-to-end
// test run the real trainer on a model the built-in settings cannot
// describe (trainer:train_with_batch_norm_model, a CNN with batch norm).
//
// Thread safety: install before any run starts (a static registrar that
// only stores the pointer); BuildRunModel may then be called from any thread.
#ifndef RECEIPT_PARITY_TRAINER_RUN_MODEL_H_
#define RECEIPT_PARITY_TRAINER_RUN_MODEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "model/classifier.h"
#include "model/model_config.h"

namespace receipt_parity {

using ModelBuilder = absl::StatusOr<std::shared_ptr<Classifier>> (*)(const ModelSettings&);

// Replaces the builder for the rest of the process; returns the previous
// one (nullptr: BuildClassifier). For test-only binaries and tests.
ModelBuilder InstallModelBuilderForTesting(ModelBuilder builder);

// The installed builder's model, or BuildClassifier(settings).
absl::StatusOr<std::shared_ptr<Classifier>> BuildRunModel(const ModelSettings& settings);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_RUN_MODEL_H_
