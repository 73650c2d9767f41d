// What a run keeps of each checked update for its replay
// (replay/update_replay.h), in its run folder beside the trajectory
// (artifacts/parity_trajectory.h):
//   trajectory/replay-K.pt    the state before K's step: the model's
//                             parameters and buffers, the optimizer's
//                             state, and the gradient K stepped with
//   trajectory/replay-K.json  ReplayInputsRecord
//                             (artifacts/parity_trajectory.proto): every
//                             rank's share of K (slots, valid, weights,
//                             micro-batches) or the ordered mode's chunks,
//                             the precision, the device, the reducer's
//                             divisor, the clipping, the schedule's factor,
//                             the .pt's size and SHA-1, stamped
// The .pt first, the .json last, each atomically; the parameters after K
// are the trajectory's point of K. Written on the writer (rank 0), which
// computes every rank's share from the plan (weighting/update_shares.h).
//
// Thread safety: functions only; one writer per run folder.
#ifndef RECEIPT_PARITY_ARTIFACTS_REPLAY_INPUTS_H_
#define RECEIPT_PARITY_ARTIFACTS_REPLAY_INPUTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "artifacts/artifact_stamp.h"
#include "replay/update_replay.h"

namespace receipt_parity {

// One checked update's replay inputs. `state.parameters_after` is not
// written (the trajectory's point holds it) and is empty when read.
struct ReplayInputs {
  RecordedUpdate update;
  RunStateAtUpdate state;
  int world_size = 1;
  double learning_rate = 0;
  // Parameter names in registration order (state.gradient's).
  std::vector<std::string> parameter_order;
};

// Writes run_dir/trajectory/replay-K.{pt,json}. Errors: Internal naming the
// file (LibTorch's, or the write's).
absl::Status WriteReplayInputs(const std::string& run_dir, const ReplayInputs& inputs,
                               const ArtifactStamp& stamp);

// The inputs of update `update`, read as untrusted input (the record as
// ReadTrajectoryPoint reads its own; every slot's dataset index inside
// [0, num_examples)). Errors name the file: NotFound when never recorded;
// DataLoss for a damaged or inconsistent one; FailedPrecondition for one
// stamped with a fingerprint not in `fingerprints` (when not empty).
absl::StatusOr<ReplayInputs> ReadReplayInputs(const std::string& run_dir, int64_t update,
                                              int64_t num_examples,
                                              const std::vector<std::string>& fingerprints = {});

// The updates whose replay inputs run_dir/trajectory/ holds, sorted.
std::vector<int64_t> RecordedReplayUpdates(const std::string& run_dir);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_ARTIFACTS_REPLAY_INPUTS_H_
