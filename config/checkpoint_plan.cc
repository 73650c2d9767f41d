#include "config/checkpoint_plan.h"

#include "logging/glog.h"

namespace receipt_parity {

std::optional<CheckpointPlan> PlanCheckpoints(const TrainingConfig& config,
                                              const std::string& run_dir) {
  const CheckpointConfig& checkpoint = config.checkpoint();
  if (checkpoint.every_updates() == 0) return std::nullopt;
  CHECK_GT(checkpoint.every_updates(), 0) << "checkpoint.every_updates not validated";
  CHECK_GT(checkpoint.keep_last(), 0) << "checkpoint.keep_last not validated";
  CheckpointPlan plan;
  plan.folder = run_dir + "/checkpoints";
  plan.every_updates = checkpoint.every_updates();
  plan.keep_last = checkpoint.keep_last();
  plan.async = checkpoint.async();
  return plan;
}

}  // namespace receipt_parity
