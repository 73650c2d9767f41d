// The one-process gradient parity check (issue 3): does a W-rank update
// give the one-worker gradient?
//
// Reference: one model, all N examples, the loss weighting evaluated for ONE
// worker holding all N (global_count: 1/N each), one backward. In
// partition-matched mode the reference instead backpropagates each rank's
// shard with those one-worker weights and sums the shard gradients in rank
// order, so that two ranks reducing with a SUM must be BITWISE equal.
//
// Multi-worker side: one model per simulated rank, all from the same
// initial parameters; rank r takes the next split[r] examples in order and
// the weights the plugin gives rank r in the W-rank composition; its
// backward runs on the calling thread, then every rank runs its own
// reducer (the configured plugin's real code) on its own thread over a REAL
// c10d ProcessGroupGloo (collectives/local_process_group.h). Rank 0's reduced
// gradients are compared with the reference, and every rank's with rank
// 0's. Only the processes are simulated, and the report says so.
//
// Thread safety: RunSimulatedParity may not run concurrently with anything
// else that seeds torch's global generator (make_model usually does).
#ifndef RECEIPT_PARITY_PARITY_SIMULATED_PARITY_H_
#define RECEIPT_PARITY_PARITY_SIMULATED_PARITY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model/classifier.h"
#include "parity/parity_report.pb.h"
#include "reducers/gradient_reducer.h"
#include "weighting/loss_weighting.h"

namespace receipt_parity {

// A model with synchronized batch norm (model/sync_batch_norm.h): each
// gradient's atol is at least this many times the fp32 reference's own
// error against fp64 (two fp32 computations by different passes may differ
// by twice it; twice that for slack, as verdicts/bf16_tolerance.h).
inline constexpr double kSyncBatchNormSafetyFactor = 4;

// ParityReport.note of every simulated check.
inline constexpr char kSimulatedParityNote[] =
    "simulated: ranks are threads of one process sharing a real Gloo process "
    "group; not a multi-process run";

struct SimulatedParityRequest {
  // Called once for the reference and once per rank, on the calling thread;
  // every call must give the same initial parameters (e.g. BuildClassifier
  // with a fixed init seed).
  std::function<absl::StatusOr<std::shared_ptr<Classifier>>()> make_model;
  // The fixed batch: inputs [N, ...] float, labels [N] int64, with
  // N = sum(split). Every example is accepted (valid).
  at::Tensor inputs;
  at::Tensor labels;
  // The examples' keys for this update (model/keyed_dropout.h: UpdateKeys),
  // int64 [N] on the CPU, for the model's keyed layers; undefined: they do
  // not act.
  at::Tensor update_keys;
  // Rank r holds the next split[r] examples, in order. Zeros allowed;
  // world size = split.size().
  std::vector<int> split;
  // Training-set examples per class; every label of the batch must be a
  // class with a non-zero count. Used by class_balanced.
  std::vector<int64_t> class_counts;
  // Not owned; must outlive the call.
  const LossWeighting* weighting = nullptr;
  std::string weighting_name;
  // Called once per rank (each rank owns its reducer).
  std::function<absl::StatusOr<std::unique_ptr<GradientReducer>>()>
      make_reducer;
  std::string reducer_name;
  bool partition_matched = false;
  double rtol = 1e-6;
  double atol = 1e-7;
  // Rendezvous and collectives fail after this long instead of hanging.
  absl::Duration collective_timeout = absl::Seconds(60);
};

// Runs the check. A parity failure is an OK status with report.pass false
// (report.failures says why). Errors:
//   InvalidArgument  a malformed request (naming the field: split, inputs,
//                    labels, class_counts, rtol/atol, a missing callback)
//   the status of make_model / make_reducer / WeightedBackward
//   the reducer's or the local group's status (prefixed with the rank)
//   Internal         any other LibTorch error
absl::StatusOr<ParityReport> RunSimulatedParity(
    const SimulatedParityRequest& request);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_PARITY_SIMULATED_PARITY_H_
