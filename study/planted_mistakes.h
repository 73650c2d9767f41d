// The study's planted mistakes (issue 47, "What these verdicts catch"): five
// mistakes, each in an otherwise correct two-worker run, in three settings,
// and each must be caught. The configs, the Python module one of them
// names and the plugins two of them load are plugins/planted/.
//
//   ddp_tail_averaging  DDP's averaging (rank_mean + rank_average), wrong
//                       only at the epoch's uneven tail
//   per_rank_clipping   each rank clips its own gradient before the sum
//   functional_dropout  a Python module that drops with
//                       torch.nn.functional.dropout (no module to audit)
//   drifting_rate       a learning rate 1 % off more each update from update
//                       2 on (test_drifting_rate, a schedule that keeps state)
//   rank_local_bias     a bias updated with the rank-local gradient
//                       (test_rank_local_bias, a reducer that skips it)
//
// Settings: fp32 (the config as it is), bf16 (--set precision=bf16) and
// synchronized batch norm (--set model.batch_norm=sync; for the Python
// module, its own SyncBatchNorm2d through the model's kwargs).
#ifndef RECEIPT_PARITY_STUDY_PLANTED_MISTAKES_H_
#define RECEIPT_PARITY_STUDY_PLANTED_MISTAKES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "parity/parity_report.pb.h"

namespace receipt_parity {

// One planted mistake in one setting.
struct PlantedRun {
  // Stable keys: the run's folder is <mistake>/<setting> under the stage's.
  std::string mistake;
  std::string setting;
  // What they are, for the report: "DDP averaging at the epoch's tail",
  // "bf16".
  std::string mistake_text;
  std::string setting_text;
  // The config's file name in plugins/planted/, and the --set overrides
  // (PATH=VALUE) that make the setting.
  std::string config;
  std::vector<std::string> overrides;
};

// The fifteen runs, mistake by mistake, each in fp32, bf16 and with
// synchronized batch norm.
std::vector<PlantedRun> PlantedRuns();

// The config files PlantedRuns names, as paths in `planted_dir`, once each.
std::vector<std::string> PlantedConfigs(const std::string& planted_dir);

// The run's folder relative to the stage's: "<mistake>/<setting>".
std::string PlantedRunDir(const PlantedRun& run);

// Trains every planted run with `train` (--config from `planted_dir`, the
// run's overrides) into `out_dir`/<mistake>/<setting>, output appended to
// `log`. Each must exit 3 (parity failed) with its parity.json written.
// Errors: FailedPrecondition naming the mistake and setting when a run
// exits 0 (no verdict caught it: the study fails); Aborted naming the run,
// its exit and the log's last lines for any other exit; NotFound when a
// run exiting 3 left no parity.json.
absl::Status TrainPlantedMistakes(const std::string& train, const std::string& planted_dir,
                                  const std::string& out_dir, const std::string& log);

// The verdicts a run's parity.json failed, in the order the harness judges
// them: "first update" (a gradient or a parameter after the step out of
// tolerance, or the ranks' gradients differing), "every update (<check>)",
// "replay", "whole run". Empty when every verdict passed.
std::vector<std::string> VerdictsThatCaught(const ParityReport& parity);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_STUDY_PLANTED_MISTAKES_H_
