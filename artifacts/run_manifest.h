// run_manifest.json: what a run trained, and on what (see run_manifest.proto).
#ifndef RECEIPT_PARITY_ARTIFACTS_RUN_MANIFEST_H_
#define RECEIPT_PARITY_ARTIFACTS_RUN_MANIFEST_H_

#include <string>

#include "data/receipt_dataset.h"
#include "model/classifier.h"
#include "artifacts/run_manifest.pb.h"
#include "config/config_loader.h"

namespace receipt_parity {

// Everything but accepted_examples_per_update and updates, which the loop
// adds as it runs.
RunManifest MakeRunManifest(const LoadedConfig& loaded, const Classifier& model,
                            const ReceiptSplit& data, int world_size);

// SHA-1 of every example's id, label, view and pixels: ranks compare it to
// prove they train on the same data.
std::string DataHash(const ReceiptSplit& data);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_ARTIFACTS_RUN_MANIFEST_H_
