// The runs of the scaling benchmark for one model: the bare LibTorch step
// (alone and two at once), this project's trainer with one and two
// workers, and PyTorch DDP with one and two workers, each a child process,
// over `Settings::rounds` interleaved rounds (the best round kept).
#ifndef RECEIPT_PARITY_BENCH_SCALING_RUNS_H_
#define RECEIPT_PARITY_BENCH_SCALING_RUNS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "bench/scaling_plan.h"
#include "bench/scaling_report.pb.h"
#include "config/config.pb.h"

namespace receipt_parity {

// Smoke sizes: 2 warm-up updates + 2 windows of 5.
inline constexpr int kSmokeUpdates = 12;
inline constexpr int kTimingWindow = 5;
inline constexpr int kWarmupUpdates = 2;

struct Programs {
  std::string train;
  std::string bare;
  std::string shm_allreduce;
  std::string ddp_script;
  std::string base_config;
  std::string python;
};

struct Settings {
  std::string out_dir;
  bool smoke = false;
  int rounds = 1;
  double seconds_per_run = 0;
  int max_updates = 0;
};

// Sets one thread everywhere (OMP/OpenBLAS/MKL) for the children and clears
// the torchrun variables a user's shell might carry (the trainer would take
// them as "run as this rank").
void PrepareEnvironment();

// Not thread-safe; one benchmark at a time. Progress goes to stdout.
class ScalingRunner {
 public:
  ScalingRunner(Programs programs, Settings settings, TrainingConfig base);
  ~ScalingRunner();

  // Every system for `model`; a failing child is an error naming it and
  // its log.
  absl::StatusOr<ModelScaling> Run(const BenchmarkModel& model);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_BENCH_SCALING_RUNS_H_
