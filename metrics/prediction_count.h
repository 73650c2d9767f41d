// Every rank's validation predictions counted once, by the metric dedup
// plugin's choice of merge (MetricDedup::StreamedMergeChunk):
//
//   gathered  every rank's rows are allgathered over the process group and
//             the plugin's Dedup() counts them; every rank gets the report
//             (each holds every prediction: memory grows with them);
//   streamed  each rank sorts its own rows by (receipt id, slot) and sends
//             them to rank 0 a chunk at a time (c10d send/recv; a rank's
//             next chunk goes when rank 0 has taken the last), and rank 0
//             merges the sorted streams (metrics/sorted_stream_merge.h)
//             into the report, holding ranks x chunk predictions at a time;
//             rank 0 then broadcasts the outcome, so every rank fails when
//             rank 0's merge refuses the predictions.
//
// Both give rank 0 the same validation.json for the same predictions.
#ifndef RECEIPT_PARITY_METRICS_PREDICTION_COUNT_H_
#define RECEIPT_PARITY_METRICS_PREDICTION_COUNT_H_

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "absl/status/statusor.h"
#include "metrics/metric_dedup.h"
#include "metrics/validation_report.pb.h"

namespace receipt_parity {

// A rank's prediction rows: int64 [rows, 4] on the CPU, each row (dataset
// index, predicted class, label, valid 0/1), padded with invalid rows to
// the same number of rows on every rank. A row's slot is its row index.
inline constexpr int kPredictionColumns = 4;

struct PredictionCountInputs {
  // Receipt ids by dataset index.
  const std::vector<std::string>* receipt_ids = nullptr;
  std::vector<std::string> label_names;
  const MetricDedup* dedup = nullptr;
  std::string dedup_name;
  int rank = 0;
  int world_size = 1;
  // nullptr for one worker (its rows are all there is).
  c10d::ProcessGroup* group = nullptr;
  // Every rank's number of valid rows, the same on every rank (each knows
  // the plan): how many predictions the pass has, and what rank 0
  // receives from each.
  std::vector<int64_t> valid_rows;
  // false: the report leaves out its per-receipt `predictions` (for the
  // benchmark, which measures the count).
  bool receipt_rows = true;
};

struct PredictionCount {
  ValidationReport report;
  // The streamed merge's chunk; 0 when the predictions were gathered.
  int64_t merge_chunk = 0;
  // Rank 0, streamed: the most predictions the merge held at once.
  int64_t peak_held = 0;
};

// Every rank must call it with its own rows (a collective). The report
// (counts, metrics, every counted receipt); with the streamed merge only
// rank 0's is the report, the others' has only `dedup` set.
// FailedPrecondition when copies of a receipt id disagree (on every rank;
// with the streamed merge the others' message points to rank 0's);
// InvalidArgument for a row naming a dataset index out of range;
// Unavailable or DeadlineExceeded when the exchange fails.
absl::StatusOr<PredictionCount> CountPredictionsOnce(const at::Tensor& mine,
                                                     const PredictionCountInputs& in);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_METRICS_PREDICTION_COUNT_H_
