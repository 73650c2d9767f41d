// One rank of the deduplication benchmark (bench/dedup_scaling.py): counts
// --predictions synthetic validation predictions dealt over the ranks of a
// real c10d Gloo group (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, as
// torchrun sets them) once per receipt id, by the gathered path or the
// sorted streaming merge (metrics/prediction_count.h), the code the
// trainer's validation runs.
//
// The predictions: U = predictions - pads distinct receipts, dealt round
// robin to the ranks as positions 0..predictions-1, position p predicting
// receipt p mod U (so the first `pads` receipts are predicted twice, on
// other ranks, as duplicate_pad does); receipt i's id is "r" and
// (i x 7919) mod 1000000007, zero-padded, so that id order is not index
// order. Copies agree.
//
// Rank 0 prints one JSON line: predictions, world_size, merge,
// chunk_rows, seconds (the count, from a barrier), rss_at_start_bytes and
// peak_above_start_bytes (its VmHWM over the count, reset first through
// /proc/self/clear_refs), peak_held (predictions the streamed merge held
// at once; 0 gathered), unique_ids_counted, duplicates_dropped. The
// per-receipt rows of validation.json are left out of the report
// (--receipt_rows=false) unless asked for: they are the report, not the
// count, and the same in both merges.
//
// Exit 0 done, 1 the count failed, 2 bad flags or environment.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/command_line.h"
#include "logging/glog.h"
#include "metrics/by_receipt_id_dedup.h"
#include "runtime/distributed_env.h"
#include "runtime/heap_trim.h"
#include "runtime/process_group.h"
#include "metrics/prediction_count.h"

ABSL_FLAG(int64_t, predictions, 1000000, "Predictions in all (every rank's), pads included.");
ABSL_FLAG(double, pad_fraction, 0.01,
          "Of the predictions, this fraction predicts a receipt a second time.");
ABSL_FLAG(std::string, merge, "streamed", "gathered or streamed.");
ABSL_FLAG(int64_t, chunk_rows, 4096, "The streamed merge's predictions per chunk.");
ABSL_FLAG(bool, receipt_rows, false,
          "Keep validation.json's per-receipt rows in the report as the trainer does.");
ABSL_FLAG(int32_t, timeout_seconds, 600, "The process group's timeout.");

namespace receipt_parity {
namespace {

// Resets VmHWM to the current RSS (Linux: "5" to clear_refs).
void ResetPeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

struct Deal {
  std::vector<std::string> receipt_ids;
  at::Tensor mine;
  std::vector<int64_t> valid_rows;
};

Deal MakeDeal(int64_t predictions, int64_t pads, int rank, int world) {
  Deal deal;
  const int64_t unique = predictions - pads;
  deal.receipt_ids.reserve(unique);
  for (int64_t i = 0; i < unique; ++i) {
    deal.receipt_ids.push_back(absl::StrFormat("r%010d", (i * 7919) % 1000000007));
  }
  int64_t rows = 0;
  for (int r = 0; r < world; ++r) {
    const int64_t count = predictions / world + (r < predictions % world ? 1 : 0);
    deal.valid_rows.push_back(count);
    rows = std::max(rows, count);
  }
  deal.mine = at::zeros({rows, kPredictionColumns}, at::kLong);
  auto acc = deal.mine.accessor<int64_t, 2>();
  int64_t row = 0;
  for (int64_t p = rank; p < predictions; p += world, ++row) {
    const int64_t index = p % unique;
    acc[row][0] = index;
    acc[row][1] = (index * 31 + 7) % 4;
    acc[row][2] = (index / 3) % 4;
    acc[row][3] = 1;
  }
  return deal;
}

int Main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  const int64_t predictions = absl::GetFlag(FLAGS_predictions);
  const double pad_fraction = absl::GetFlag(FLAGS_pad_fraction);
  const std::string merge = absl::GetFlag(FLAGS_merge);
  const int64_t chunk = absl::GetFlag(FLAGS_chunk_rows);
  if (predictions < 1 || pad_fraction < 0 || pad_fraction >= 1 || chunk < 1 ||
      (merge != "gathered" && merge != "streamed")) {
    return ReportFailure(absl::InvalidArgumentError(
        "--predictions >= 1, --pad_fraction in [0, 1), --chunk_rows >= 1 and --merge gathered or "
        "streamed"));
  }
  absl::StatusOr<std::optional<DistributedEnv>> env = DistributedEnvFromEnvironment();
  if (!env.ok()) return ReportFailure(env.status());
  if (!env->has_value()) {
    return ReportFailure(absl::InvalidArgumentError(
        "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT: run it under bench/dedup_scaling.py"));
  }
  const DistributedEnv& dist = **env;
  const Deal deal = MakeDeal(predictions, static_cast<int64_t>(predictions * pad_fraction),
                             dist.rank, dist.world_size);
  absl::StatusOr<ProcessGroupHandle> group =
      ConnectProcessGroup(dist, std::chrono::seconds(absl::GetFlag(FLAGS_timeout_seconds)));
  if (!group.ok()) return ReportFailure(group.status());

  ReceiptMergeChoice choice;
  choice.merge = merge == "streamed" ? ReceiptMerge::kStreamed : ReceiptMerge::kGathered;
  choice.chunk_rows = chunk;
  const ByReceiptIdDedup dedup(choice);
  PredictionCountInputs in;
  in.receipt_ids = &deal.receipt_ids;
  in.label_names = {"ok", "blurred", "faded", "cropped"};
  in.dedup = &dedup;
  in.dedup_name = ByReceiptIdDedup::kName;
  in.rank = dist.rank;
  in.world_size = dist.world_size;
  in.group = dist.world_size > 1 ? group->group.get() : nullptr;
  in.valid_rows = deal.valid_rows;
  in.receipt_rows = absl::GetFlag(FLAGS_receipt_rows);

  if (in.group != nullptr) group->group->barrier()->wait();
  ResetPeakRss();
  const int64_t rss_at_start = ProcessStatusKib("VmRSS") * 1024;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<PredictionCount> count = CountPredictionsOnce(deal.mine, in);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int64_t peak = ProcessStatusKib("VmHWM") * 1024;
  if (!count.ok()) return ReportFailure(count.status());
  if (dist.rank == 0) {
    std::cout << absl::StrFormat(
                     "{\"predictions\": %d, \"world_size\": %d, \"merge\": \"%s\", "
                     "\"chunk_rows\": %d, \"seconds\": %.4f, \"rss_at_start_bytes\": %d, "
                     "\"peak_above_start_bytes\": %d, \"peak_held\": %d, "
                     "\"unique_ids_counted\": %d, \"duplicates_dropped\": %d}",
                     predictions, dist.world_size, merge, chunk, seconds, rss_at_start,
                     peak - rss_at_start, count->peak_held, count->report.unique_ids_counted(),
                     count->report.duplicates_dropped())
              << std::endl;
  }
  return 0;
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) { return receipt_parity::Main(argc, argv); }
