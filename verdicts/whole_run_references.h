// What the whole-run parity verdict of a multi-worker run asks of its
// references and gets back (parity/whole_run_parity.h): verdicts/run_parity.h
// judges with it, trainer/run_folder_setup.h makes it, and the training run
// (trainer/training_run_options.h) is handed the maker. Header only.
#ifndef RECEIPT_PARITY_VERDICTS_WHOLE_RUN_REFERENCES_H_
#define RECEIPT_PARITY_VERDICTS_WHOLE_RUN_REFERENCES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace receipt_parity {

// What the whole-run verdict of a run needs of its references
// (parity/whole_run_parity.h).
struct WholeRunRequest {
  // The run's checked updates, sorted; and its length in updates.
  std::vector<int64_t> check_updates;
  int64_t run_length = 0;
};

// Where the references' trajectories are (artifacts/parity_trajectory.h),
// each holding every checked update, and the fingerprints that stamp them.
struct WholeRunReferences {
  std::string reference_dir;
  std::string reference_fingerprint;
  // The drift twin; empty (and twin_micro_batches 0) in bitwise mode.
  std::string twin_dir;
  std::string twin_fingerprint;
  int twin_micro_batches = 0;
};

// Makes sure of WholeRunReferences for a request, training what is missing
// (trainer/run_folder_setup.h, EnsureWholeRunReferences).
using WholeRunReferencesMaker =
    std::function<absl::StatusOr<WholeRunReferences>(const WholeRunRequest&)>;

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_VERDICTS_WHOLE_RUN_REFERENCES_H_
