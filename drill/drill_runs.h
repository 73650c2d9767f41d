// What both fault drills (the fixed kill point of fault_drill_main.cc and
// the random trials of drill/random_kill_drill.h) do with the runs they
// start: run the real train binary in a run folder with its output in a
// log, read what the killed run and the launcher said, list what a kill
// left on disk, and compare a resumed run with the uninterrupted one.
//
// Nothing here decides whether a recovery holds; the drills judge.
#ifndef RECEIPT_PARITY_DRILL_DRILL_RUNS_H_
#define RECEIPT_PARITY_DRILL_DRILL_RUNS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/subprocess.h"
#include "artifacts/first_step.pb.h"

namespace receipt_parity {

// Lines printed as they come and kept for failure_trace.log.
class Trace {
 public:
  void Line(const std::string& text);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// The train program and the config every run of a drill uses.
struct TrainProgram {
  std::string train;  // the train binary
  std::string config_path;
  // The drill's --set overrides ("PATH=VALUE"), passed to every run as
  // --set, so each run trains the config the drill checked.
  std::vector<std::string> config_sets;
  // Where a run folder's artifacts and checkpoints are: "/reference" for a
  // one-worker config (its run folder is DIR/reference), "" otherwise.
  std::string artifacts_of;

  // RUN_DIR<artifacts_of>/NAME.
  std::string Artifact(const std::string& run_dir, const std::string& name) const;

  // Runs `train --config=CONFIG --set=S... ARGS...` to its end, its output in `log`
  // (started afresh). Errors: RunProcess's (the binary is missing, the log
  // cannot be opened); how the run ended is the caller's to judge.
  absl::StatusOr<ProcessExit> Run(const std::vector<std::string>& args,
                                  const std::string& log) const;
};

// What every drill checks and knows before it runs anything.
struct DrillSetup {
  TrainProgram program;
  std::string out;
  int world_size = 1;
  int every_updates = 0;  // checkpoint.every_updates
  // checkpoint.async: a kill may also lose the save in flight, so a
  // restart may redo up to 2 x every_updates updates.
  bool async_save = false;
};

// `sets`: --set's "PATH=VALUE" overrides of the config
// (config/config_overrides.h), checked here with the config.
// Errors: InvalidArgument (exit 2) for an empty `config_path` or `out` and
// for a config without checkpoints (naming its line or override); the
// config's own load errors; NotFound when `train` is missing.
absl::StatusOr<DrillSetup> MakeDrillSetup(const std::string& train,
                                          const std::string& config_path,
                                          const std::vector<std::string>& sets,
                                          const std::string& out);

// Internal "the <what> <how it ended>; see <log>" unless the run exited 0.
absl::Status RequireSuccess(const absl::StatusOr<ProcessExit>& exit,
                            const std::string& what, const std::string& log);

// The last line of `log` that contains `needle`; "" if none.
std::string LastLineWith(const std::string& log, const std::string& needle);

// The message of a glog line, after its "I1201 12:00:00.000 123 file.cc:1] ".
std::string LogMessage(const std::string& line);

// The kill as the killed run's log tells it: the message of its last
// "fault injection:" line; "" when the run never reached its injection.
std::string FaultInjectionLine(const std::string& log);

// "rank 1 was killed by signal 9 (Killed)", from the launcher's line in
// `log` (under mpirun, from mpirun's: "rank 1 with PID ... exited on
// signal 9 (Killed)."), else how the train process itself ended.
std::string KilledHow(const std::string& log, const ProcessExit& exit);

// A killed run that failed on its own before its injection:
// InvalidArgument (exit 2: the train binary refused its input) or
// Internal, with the last lines of `log`. REQUIRES: !exit.ok().
absl::Status FailedBeforeInjection(const ProcessExit& exit, const std::string& log);

// "gen-000002 [no MANIFEST]: shard-rank-00000.pt (9190 bytes), ..." for
// each folder under `root`, sorted.
std::vector<std::string> DescribeDisk(const std::string& root);

// Two update-K.json records (FirstStep in artifacts/first_step.proto) of the
// same update: the reduced gradients before the step and the parameters
// after it.
struct UpdateComparison {
  double max_abs_gradient_diff = 0;
  double max_abs_parameter_diff = 0;
  bool bitwise_equal = false;  // gradients and parameters
};
// Errors: either file unreadable, or tensors that do not load.
absl::StatusOr<UpdateComparison> CompareUpdateRecords(const std::string& resumed,
                                                      const std::string& uninterrupted);

// run_summary.json's final_parameter_hash of RUN_DIR.
absl::StatusOr<std::string> FinalParameterHash(const TrainProgram& program,
                                               const std::string& run_dir);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DRILL_DRILL_RUNS_H_
