// Whether a run saves checkpoint generations, where, how often and how many
// it keeps: decided once per run folder, from its config (trainer/
// train_main.cc), and passed down as it is to the resume at start
// (checkpointing/run_checkpoints.h), the save cadence (checkpointing/checkpoint_cadence.h)
// and retention (checkpoint/save_generation.h). No part of the run decides
// it again.
#ifndef RECEIPT_PARITY_CONFIG_CHECKPOINT_PLAN_H_
#define RECEIPT_PARITY_CONFIG_CHECKPOINT_PLAN_H_

#include <optional>
#include <string>

#include "config/config.pb.h"

namespace receipt_parity {

struct CheckpointPlan {
  // RUN_DIR/checkpoints: the gen-NNNNNN folders.
  std::string folder;
  // A generation after every this many completed updates (>= 1).
  int every_updates = 1;
  // Advertised generations kept (>= 1).
  int keep_last = 1;
  // checkpoint.async: written by a background thread while training goes on.
  bool async = false;
};

// `config`'s plan for the run folder `run_dir`; nullopt when
// checkpoint.every_updates is 0: the run saves no generation and resumes
// from none. REQUIRES: `config` loaded (config/config_loader.h: defaults
// applied, every_updates >= 0, keep_last >= 1 when every_updates > 0).
std::optional<CheckpointPlan> PlanCheckpoints(const TrainingConfig& config,
                                              const std::string& run_dir);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFIG_CHECKPOINT_PLAN_H_
