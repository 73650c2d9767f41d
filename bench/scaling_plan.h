// What //bench:scaling runs: its two models, the trainer config of each of
// its runs, and the arguments of the baselines (bench/ddp_baseline.py and
// bench/bare_libtorch_step), so that every system trains the same
// architecture on the same batch per rank with the same optimizer.
//
// Pure functions over protos: nothing here runs or writes anything.
#ifndef RECEIPT_PARITY_BENCH_SCALING_PLAN_H_
#define RECEIPT_PARITY_BENCH_SCALING_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/config.pb.h"

namespace receipt_parity {

// One model of the benchmark.
struct BenchmarkModel {
  // "compute_bound" or "communication_bound": stable, they key the report.
  std::string name;
  ModelConfig model;
  int image_size = 32;
  int batch_per_rank = 32;
};

// The communication-bound model of issue 7: an MLP of about 250 000
// parameters on 32x32 inputs, batch 32 per rank (hidden_units [244]:
// 1024*244 + 244 + 244*4 + 4 = 251 080 parameters, one gradient bucket).
BenchmarkModel CommunicationBoundMlp();

// Parses the base config (text proto: data, optimizer, seeds, plugins).
// `name` stands for the file in messages. InvalidArgument "NAME:LINE:COL:
// message" on a syntax error; InvalidArgument naming the field when the
// config cannot be benchmarked: data not synthetic (the benchmark sizes
// its epochs from the synthetic data's size), global_batch not divisible by
// world_size, or a missing model.
absl::StatusOr<TrainingConfig> ParseBaseConfig(const std::string& text,
                                               const std::string& name);

// The two models: "compute_bound" = the base config's model, image size
// and per-rank batch (global_batch / world_size); then
// CommunicationBoundMlp(). REQUIRES: ParseBaseConfig accepted `base`.
std::vector<BenchmarkModel> BenchmarkModels(const TrainingConfig& base);

// The trainer config of one run: the base config's data, optimizer, seeds
// and plugins; `model` at `world_size` workers with global_batch =
// batch_per_rank * world_size (even split); run.max_updates = `updates`
// and enough epochs to hold them (see EpochsFor); one intra-op thread; no
// checkpoints, no fault injection; progress logged about 4 times.
// REQUIRES: updates >= 1, world_size >= 1.
TrainingConfig TrainerConfig(const TrainingConfig& base,
                             const BenchmarkModel& model, int world_size,
                             int updates);

// Epochs that hold at least `updates` updates of `global_batch` slots on
// the synthetic data of `data` (a lower bound on the training views per
// epoch, so never too few), plus one.
int EpochsFor(const DataConfig& data, int global_batch, int updates);

// The receipt pool files of a model (bench/receipt_pool.h).
struct PoolFiles {
  std::string images;
  std::string labels;
};

// Arguments (after the interpreter) of bench/ddp_baseline.py for `model`
// with the base config's SGD settings, training on `pool`; `updates`
// synchronised updates, then `no_sync_updates` compute-only ones; result
// to `out`.
std::vector<std::string> DdpArguments(const std::string& script,
                                      const BenchmarkModel& model,
                                      const OptimizerConfig& optimizer,
                                      const PoolFiles& pool, int world_size,
                                      int updates, int no_sync_updates,
                                      const std::string& out);

// Arguments (after the program) of bench/bare_libtorch_step.
std::vector<std::string> BareArguments(const BenchmarkModel& model,
                                       const OptimizerConfig& optimizer,
                                       const PoolFiles& pool,
                                       int warmup_updates, int updates,
                                       double max_seconds,
                                       const std::string& out);

// How a trainer run differs from the base config: not at all; its reducer
// allreduce_sum over several buckets with and without overlap with the
// backward pass, or over OpenMPI (reducer mpi_allreduce: allreduce_sum
// after the backward pass over backend "mpi", its ranks under the
// launcher's mpirun; the name the benchmark's MPI figures were measured
// with); or each update in 2 or 4 micro-batches per rank at the same
// global batch (accumulation_steps); or the ordered mode (reducer
// ordered_sum, chunks of OrderedSumChunkSlots slots: each chunk's gradient
// computed alone, summed along the ordered mode's tree).
enum class TrainerVariant {
  kAsConfigured,
  kBucketsOverlapped,
  kBucketsNotOverlapped,
  kOverMpi,
  kAccumulation2,
  kAccumulation4,
  kOrderedSum,
  // Issue 49: ordered_sum with one chunk a rank (chunk_slots = a rank's
  // batch): the ordered mode's reduction without its extra chunk passes.
  kOrderedSumWholeShares,
  // parity { every_update: false }: what the every-update checks cost
  // (docs/parity.md), as configured and over MPI.
  kChecksOff,
  kChecksOffOverMpi,
  // Issue 49: a batch norm after each conv layer, synchronized or per rank
  // (torch's BatchNorm2d, parity.stop_on_failure false: it fails parity),
  // in 1, 2 or 4 micro-batches per update.
  kPerRankBatchNorm,
  kSyncBatchNorm,
  kPerRankBatchNormAccumulation2,
  kSyncBatchNormAccumulation2,
  kPerRankBatchNormAccumulation4,
  kSyncBatchNormAccumulation4
};

// The batch norm a variant puts after each conv layer: "sync", "per_rank",
// or "" (the base config's model as it is).
std::string BatchNormOf(TrainerVariant how);

// Whether the benchmark can run the batch-norm variants on `model`: a cnn
// (a batch norm follows a conv layer).
bool TakesBatchNorm(const BenchmarkModel& model);

// The exit code a run of `how` ends with when it trains to its end: 3 for
// per-rank batch norm (its parity fails, as it should), else 0.
int ExpectedExitCode(TrainerVariant how);

// The ordered_sum variant's chunk_slots for a per-rank batch: half of it
// (at least 1), so that each rank computes two chunks alone per update,
// as accumulation_steps 2 does, and all-reduces every chunk's gradient
// (world_size * 2 gradients' bytes instead of one).
int OrderedSumChunkSlots(int batch_per_rank);

// The micro-batches per update of `how`: 2 or 4 for the accumulation
// variants (with or without a batch norm), 1 otherwise.
int AccumulationStepsOf(TrainerVariant how);

// The largest accumulation_steps a benchmark variant uses: the base
// config's per-rank batch must be a multiple of it.
inline constexpr int kLargestBenchmarkAccumulation = 4;

// The suffix of a variant's run names ("" for kAsConfigured,
// "_buckets_overlap", "_buckets_no_overlap", "_mpi", "_accumulation_2",
// "_accumulation_4", "_ordered_sum", "_sync_batch_norm_accumulation_2",
// ...).
std::string VariantTag(TrainerVariant how);

// The variant as the benchmark announces it ("" for kAsConfigured).
std::string VariantLabel(TrainerVariant how, int64_t bucket_cap_bytes);

// `config` set for `how`: unchanged; its reducer allreduce_sum with
// buckets of at most `bucket_cap_bytes` and overlap_backward on or off, or
// mpi_allreduce (no options) with run.launcher "mpirun"; or its
// accumulation_steps 2 or 4 (global_batch unchanged); or its reducer
// ordered_sum with chunk_slots OrderedSumChunkSlots(its per-rank batch)
// (sampler and loss weighting unchanged: only the reducer differs); or its
// model's batch_norm BatchNormOf(how) and accumulation_steps
// AccumulationStepsOf(how) (per rank: parity.stop_on_failure false).
// REQUIRES for the batch-norm variants: TakesBatchNorm of the model.
TrainingConfig WithTrainerVariant(TrainingConfig config, TrainerVariant how,
                                  int64_t bucket_cap_bytes);

// How a run's model is given (issue 27's costs): the architecture form
// (built in); the same layers scripted into a TorchScript file
// (ddp_baseline.py --script-to, model "torchscript"); or the same layers
// as a Python nn.Module trained from its source (ddp_baseline.py's
// benchmark_model, model "python_module").
enum class ModelRoute { kBuiltIn, kTorchScript, kPythonModule };

// The suffix of a route's run names ("", "_torchscript", "_python_module")
// and how the benchmark announces it.
std::string RouteTag(ModelRoute route);
std::string RouteLabel(ModelRoute route);

// ddp_baseline.benchmark_model's keyword arguments for `model`, a JSON
// object: {"architecture": "cnn", "conv_channels": [...], ...}.
std::string BenchmarkModelKwargs(const BenchmarkModel& model);

// Arguments (after the interpreter) of ddp_baseline.py that write `model`
// as TorchScript to `out`, seeded by `seed`.
std::vector<std::string> ScriptModelArguments(const std::string& script,
                                              const BenchmarkModel& model, uint64_t seed,
                                              const std::string& out);

// `config` with its model given by `route`: unchanged for kBuiltIn; else
// the plugin form naming `file` (the .pt; or ddp_baseline.py with factory
// benchmark_model and BenchmarkModelKwargs(model)).
TrainingConfig WithModelRoute(TrainingConfig config, const BenchmarkModel& model,
                              ModelRoute route, const std::string& file);

// Updates that take about `seconds` at `update_seconds` each, clamped to
// [min_updates, max_updates]. REQUIRES: min_updates <= max_updates.
int UpdatesFor(double seconds, double update_seconds, int min_updates,
               int max_updates);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_BENCH_SCALING_PLAN_H_
