// Runs the study's stages in order, one progress line as each starts and
// one as it ends (with its seconds), and stops at the first that fails.
#ifndef RECEIPT_PARITY_STUDY_STAGE_RUNNER_H_
#define RECEIPT_PARITY_STUDY_STAGE_RUNNER_H_

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace receipt_parity {

struct Stage {
  // Short and stable, e.g. "two_worker"; it names the stage in progress
  // lines and errors.
  std::string name;
  // One line saying what the stage does, printed when it starts.
  std::string description;
  std::function<absl::Status()> run;
};

// Runs `stages` in order, writing to `progress` (REQUIRES: not null; not
// owned):
//   [2/6] parity_simulated: one-process parity check, 3+1 split
//   [2/6] parity_simulated: done in 1.4 s
// or, for a failing stage, "[2/6] parity_simulated: FAILED after 1.4 s".
// Returns OK when every stage succeeded. Otherwise the stages after the
// failing one are not run, and the error keeps the stage's status code with
// the message "stage 'parity_simulated' failed: <the stage's message>".
// Thread safety: runs the stages on the calling thread.
absl::Status RunStages(const std::vector<Stage>& stages,
                       std::ostream* progress);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_STUDY_STAGE_RUNNER_H_
