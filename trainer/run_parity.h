// parity.json for a REAL multi-worker run: rank 0's first update (the
// reduced global gradients before stepping, and the parameters after the
// step) against the one-worker reference's first_step.json.
#ifndef RECEIPT_PARITY_TRAINER_RUN_PARITY_H_
#define RECEIPT_PARITY_TRAINER_RUN_PARITY_H_

#include <string>

#include "absl/status/statusor.h"
#include "parity/parity_report.pb.h"
#include "artifacts/first_step.pb.h"
#include "config/config.pb.h"

namespace receipt_parity {

// Tolerances from config.parity(); when the run (config.device()) and the
// reference (its run_manifest.json's platform.device) are on different
// kinds of device, at least the cross-device tolerance
// (parity/cross_device_tolerance.h), and tolerance_reason says which.
// `pass` requires every gradient and
// parameter within tolerance, the same receipts in the update as the
// reference's first update, and `ranks_agree` (every replica ended the run
// with bitwise-identical parameters). `failures` says by how much it fails.
// FailedPrecondition when the reference's first_step.json is missing or
// unreadable (naming the file) or describes other parameters.
absl::StatusOr<ParityReport> CheckRunParity(const FirstStep& run,
                                            const std::string& reference_dir,
                                            const TrainingConfig& config,
                                            bool ranks_agree);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_TRAINER_RUN_PARITY_H_
