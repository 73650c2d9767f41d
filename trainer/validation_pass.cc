#include "trainer/validation_pass.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "absl/strings/str_cat.h"
#include "checkpoint/phase_kill.h"
#include "data/label_map.h"
#include "collectives/collective_error.h"
#include "model/autocast_scope.h"
#include "metrics/prediction_count.h"

namespace receipt_parity {
namespace {

// Predictions in eval mode (batch norm uses its running statistics and
// leaves them, dropout is off); the mode every module had comes back after
// (a submodule the model keeps in eval mode stays so).
class EvalModeScope {
 public:
  explicit EvalModeScope(Classifier& model) : model_(model), was_training_(model.is_training()) {
    for (const std::shared_ptr<torch::nn::Module>& m : model.modules(/*include_self=*/false)) {
      submodule_modes_.emplace_back(m, m->is_training());
    }
    model_.eval();
  }
  // The model first, then its submodules in the order modules() gives
  // (each before its children), so each ends in its own mode.
  ~EvalModeScope() {
    model_.train(was_training_);
    for (auto& [module, training] : submodule_modes_) module->train(training);
  }
  EvalModeScope(const EvalModeScope&) = delete;
  EvalModeScope& operator=(const EvalModeScope&) = delete;

 private:
  Classifier& model_;
  bool was_training_;
  std::vector<std::pair<std::shared_ptr<torch::nn::Module>, bool>> submodule_modes_;
};

// Receipts per forward pass: the activations of a whole validation shard
// at once would be the largest memory a rank holds (for the study's CNN,
// 450 receipts took some 85 MB more than training does).
constexpr size_t kValidationChunk = 64;

// This rank's rows, padded with invalid rows to `rows`. Throws what
// LibTorch throws; errors of the example source come back.
absl::StatusOr<at::Tensor> PredictRows(Classifier& model, const ValidationInputs& in,
                                       const std::vector<Slot>& slots, int64_t rows) {
  at::Tensor out = at::zeros({rows, kPredictionColumns}, at::kLong);
  auto acc = out.accessor<int64_t, 2>();
  torch::NoGradGuard no_grad;
  const EvalModeScope eval(model);
  for (size_t first = 0; first < slots.size(); first += kValidationChunk) {
    const std::vector<Slot> chunk(
        slots.begin() + first,
        slots.begin() + std::min(slots.size(), first + kValidationChunk));
    absl::StatusOr<ExampleTensors> selected = in.examples->Select(chunk);
    if (!selected.ok()) return selected.status();
    const ExampleTensors& batch = *selected;
    at::Tensor predicted;
    {
      const AutocastScope autocast(batch.images.device().type(), in.bf16);
      predicted = model.forward(batch.images).argmax(1).to(at::kCPU);
    }
    const at::Tensor labels = batch.labels.to(at::kCPU);
    for (size_t i = 0; i < chunk.size(); ++i) {
      acc[first + i][0] = chunk[i].dataset_index;
      acc[first + i][1] = predicted[i].item<int64_t>();
      acc[first + i][2] = labels[i].item<int64_t>();
      acc[first + i][3] = chunk[i].valid ? 1 : 0;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<ValidationReport> RunValidation(Classifier& model,
                                               const ValidationInputs& in) {
  OrderRequest request;
  request.num_examples = in.examples->size();
  request.world_size = in.world_size;
  request.seed = in.seed;
  request.epoch = 0;
  absl::StatusOr<EpochPlan> plan = BuildEpochPlan(
      *in.policy, request, std::vector<int>(in.world_size, 1));
  if (!plan.ok()) return plan.status();
  int64_t rows = 0;
  for (int r = 0; r < in.world_size; ++r) {
    rows = std::max<int64_t>(rows, plan->NumRankSlots(r));
  }
  PredictionCountInputs counting;
  counting.receipt_ids = in.receipt_ids;
  counting.label_names = LabelNames();
  counting.dedup = in.dedup;
  counting.dedup_name = in.dedup_name;
  counting.rank = in.rank;
  counting.world_size = in.world_size;
  counting.group = in.group;
  for (int r = 0; r < in.world_size; ++r) {
    int64_t valid_rows = 0;
    for (const Slot& slot : plan->rank_slots(r)) valid_rows += slot.valid;
    counting.valid_rows.push_back(valid_rows);
  }
  const PhaseKillScope injected_kill(in.phase_kill, KillPhase::kValidationGather, in.rank,
                                     in.completed_updates);
  absl::StatusOr<at::Tensor> mine;
  try {
    mine = PredictRows(model, in, plan->rank_slots(in.rank).ToVector(), rows);
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "validation: predicting this rank's slots failed");
  }
  if (!mine.ok()) return mine.status();
  absl::StatusOr<PredictionCount> count = CountPredictionsOnce(*mine, counting);
  if (!count.ok()) return count.status();
  return std::move(count->report);
}

}  // namespace receipt_parity
