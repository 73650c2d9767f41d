// Layer 3 of the verdict (docs/parity.md, "Replayed bit for bit"): one
// process recomputes a checked update K of a multi-worker run from the
// run's own state before K, exactly as the ranks computed it, and compares
// the result with what the run stepped with and where it stepped to.
//
//   each rank r's share: a fresh model holding the run's parameters and
//     buffers before K, r's micro-batches with r's local batch, weights,
//     precision and keys (model/share_backward.h: the ranks' own code);
//     with synchronized batch norms the ranks' statistics are added by a
//     c10d Gloo group whose ranks are threads of this process
//     (collectives/local_process_group.h); the ordered mode's chunks
//     computed alone, each a row
//   the sum: the shares' gradients added in rank order and divided by the
//     reducer's divisor, or the rows (+0) added in chunk order
//   the clipping (scope global: the sum's norm; local: each share's own
//     before the sum) and the optimizer step: a fresh optimizer holding
//     the run's state before K, at the schedule's rate of K
//     (optimizers/step_rules.h)
//
// The default CPU generator is seeded with `ReplayTools.generator_seed`
// (not the run's): a keyed layer draws what it drew in the run, anything
// that draws from the generator instead (torch.nn.functional.dropout in a
// team's module) draws otherwise, and the replay shows it.
//
// Modes (UpdateReplay.mode):
//   bitwise  the ordered mode, or at most two ranks: every reduction of two
//            terms rounds once, the same in any order, so the replay's
//            gradient and parameters must equal the run's bit for bit;
//   bound    three ranks or more: the run's reduction order is unknown
//            (a ring all-reduce adds each element in an order of its own);
//            the gradient must lie within the rigorous bound of two sums of
//            W terms in different orders, elementwise
//              |run - replay| <= c * 2 gamma(W-1) sum_r |g_r| / d
//                                + |c_run - c| |sum| / d + 2u |c sum / d|
//            (u = 2^-24, gamma(n) = n u / (1 - n u), d the reducer's
//            divisor, c and c_run the replay's and the run's clip factors,
//            the last term the roundings of the division and the scaling),
//            and the step, replayed from the run's own gradient, must land
//            on the run's parameters bit for bit;
//   not_replayed  what the replay cannot recompute faithfully, saying
//            why: a run on another device than the CPU, synchronized
//            batch norms on more than two ranks (their statistics' order is
//            the collective's), local clipping in the ordered mode.
//
// Thread safety: changes the default CPU generator's state (restored
// before it returns); one replay at a time per process.
#ifndef RECEIPT_PARITY_REPLAY_UPDATE_REPLAY_H_
#define RECEIPT_PARITY_REPLAY_UPDATE_REPLAY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "data/example_source.h"
#include "model/classifier.h"
#include "optimizers/optimizer_plugin.h"
#include "schedules/lr_schedule.h"
#include "optimizers/step_rules.h"
#include "parity/parity_report.pb.h"
#include "parity/tensor_comparison.h"
#include "weighting/update_shares.h"

namespace receipt_parity {

// What the run recorded of how update K was computed.
struct RecordedUpdate {
  // The run's global update.
  int64_t total_update = 0;
  bool bf16 = false;
  // Where the run computed ("cpu", "cuda:0").
  std::string device = "cpu";
  // Every rank's share, rank order (empty in the ordered mode).
  std::vector<std::vector<MicroBatchShare>> shares;
  // The ordered mode: every chunk (each with the rank that computed it)
  // and the rows of the chunk matrix; empty and 0 otherwise.
  std::vector<ChunkShare> chunks;
  int64_t chunk_rows = 0;
  // The reducer's GradientReducer::reduced_divisor of the run's world.
  int reduced_divisor = 1;
  std::optional<GradientClipping> clipping;
  // The clip factor the run applied (1 without clipping or with scope
  // local).
  double run_clip_factor = 1;
  // The schedule's factor of update K (LearningRateSchedule::Factor).
  double rate_factor = 1;
};

// The run's state around update K.
struct RunStateAtUpdate {
  // The model before K's step, by checkpoint name (model/model_state.h).
  std::map<std::string, at::Tensor> model_before;
  // The optimizer's state before K's step (OptimizerPlugin::SaveState).
  OptimizerState optimizer_before;
  // What K's step stepped with (reduced, clipped), and the parameters
  // after it; both in registration order.
  NamedTensors gradient;
  NamedTensors parameters_after;
};

struct ReplayTools {
  // A new model of the run's config, on the CPU (not trained).
  std::function<absl::StatusOr<std::shared_ptr<Classifier>>()> make_model;
  const OptimizerPlugin* optimizer = nullptr;
  // The training examples by dataset index.
  const ExampleSource* examples = nullptr;
  // The default generator's seed while replaying; not the run's.
  uint64_t generator_seed = 0;
  // The statistics' group gives up after this.
  absl::Duration timeout = absl::Seconds(60);
  // A new schedule of the run's config, made for this replay alone (unset:
  // the recorded rate_factor is used). The replay steps at its Factor(K),
  // which the schedule's contract makes a function of K alone, and a rate
  // the run stepped with otherwise (a schedule that keeps state between
  // calls) fails the update.
  std::function<absl::StatusOr<std::unique_ptr<LearningRateSchedule>>()> make_schedule;
};

// The sentence UpdateReplay and ReplayVerdict give as `method`.
std::string ReplayMethod();

// Replays update `update` and judges it. An error status only when the
// inputs are unusable (a state that does not fit the model: naming the
// tensor; a model that cannot be made); a replay that differs is a
// failing UpdateReplay, naming the first tensor and element that differ.
absl::StatusOr<UpdateReplay> ReplayUpdate(const RecordedUpdate& update,
                                          const RunStateAtUpdate& state,
                                          const ReplayTools& tools);

// A tensor's power (TensorPower): the smallest relative change of one
// step that comparing `after` bit for bit would detect, the smallest over
// the elements that moved of half an ulp of |after| (as float32) over
// |after - before| (in double); nullopt when no element moved; NaN where a
// ratio is NaN (an infinite parameter). Float32 CPU tensors take one pass
// without temporaries, any other dtype LibTorch's kernels: the same value.
// Throws LibTorch's errors. REQUIRES: the same number of elements.
std::optional<double> SmallestDetectableChange(const at::Tensor& after, const at::Tensor& before);

// The verdict over `updates` (pass: every replayed one passes, one at least
// was replayed).
ReplayVerdict ReplayVerdictOf(std::vector<UpdateReplay> updates);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_REPLAY_UPDATE_REPLAY_H_
