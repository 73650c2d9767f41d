// The study (issue 7): which programs run, in which order, with which
// arguments, and which of their artifacts are copied to the top of the
// study folder (study/study_layout.h, DESIGN.md "Artifacts of a study").
//
//   one_worker        //trainer:train, configs/one_worker.pbtxt
//   parity_simulated  //parity_check:parity, 3+1 split, one process
//   sampler_audit     //audit:audit, 47 ids on 3 ranks, both policies
//   two_worker        //trainer:train, configs/two_worker_masked_tail.pbtxt
//   two_worker_mpi    //trainer:train, configs/two_worker_mpi.pbtxt (the
//                     same over OpenMPI), only where MpirunInstalled()
//                     (runtime/mpirun_launcher.h): elsewhere it succeeds
//                     without running and the report says "not measured"
//   two_worker_bf16   //trainer:train, configs/two_worker_bf16.pbtxt (the
//                     two-worker run with bf16 forward passes, its own
//                     bf16 reference and derived tolerance)
//   world_size_change //trainer:train, configs/world_size_change*.pbtxt:
//                     the run uninterrupted on two workers, preempted at
//                     update 25 and continued on three and on one; its
//                     duplicate_pad twin preempted and continued on three
//   planted_mistakes  //trainer:train, plugins/planted/*.pbtxt: five planted
//                     mistakes in fp32, bf16 and with synchronized batch
//                     norm, each of which must fail parity
//                     (study/planted_mistakes.h)
//   fault_drill       //drill:fault_drill, same config
//   trade_report      trade_report.{json,md,svg}
#ifndef RECEIPT_PARITY_STUDY_STUDY_STAGES_H_
#define RECEIPT_PARITY_STUDY_STUDY_STAGES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "study/stage_runner.h"

namespace receipt_parity {

// Absolute paths of the programs and configs the study runs.
struct StudyPrograms {
  std::string train;
  std::string parity;
  std::string fault_drill;
  std::string sampler_audit;
  // Holds one_worker.pbtxt, two_worker_masked_tail.pbtxt,
  // two_worker_mpi.pbtxt and two_worker_bf16.pbtxt.
  std::string configs_dir;
  // plugins/planted/: the planted mistakes' configs, the Python module one
  // names and libplanted_mistakes.so.
  std::string planted_dir;
};

struct StudyOptions {
  // Absolute path of the study folder. REQUIRES: PrepareStudyFolder ran.
  std::string out_dir;
  // DistributedSampler's seed for the sampler audits.
  uint64_t audit_seed = 0;
};

// Makes `out_dir` ready for a fresh study: creates it when missing; when it
// holds a previous study (its marker file), empties it; then writes the
// marker. Errors: FailedPrecondition when `out_dir` is a non-empty folder
// the study did not make (nothing is deleted); Internal for I/O errors,
// naming the path.
absl::Status PrepareStudyFolder(const std::string& out_dir);

// The training configs the stages pass to their programs, as paths (the
// MPI one too where its stage will not run: it is shipped and checked),
// the planted mistakes' last.
std::vector<std::string> StudyConfigs(const StudyPrograms& programs);

// The stages in order. They only capture copies of the arguments. Each
// program's output goes to OUT/logs/<stage>.log; a stage fails when its
// program is missing, exits non-zero (the error names the program, its exit
// and the log's last lines) or leaves out an artifact the study copies.
std::vector<Stage> StudyStages(const StudyPrograms& programs,
                               const StudyOptions& options);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_STUDY_STUDY_STAGES_H_
