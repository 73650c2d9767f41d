#include "metrics/prediction_count.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"
#include "logging/glog.h"
#include "metrics/classification_metrics.h"
#include "metrics/sorted_stream_merge.h"

namespace receipt_parity {
namespace {

// The tag of the streamed merge's point-to-point chunks.
constexpr int kStreamTag = 29;

// One valid prediction row as it travels: what a Prediction holds, with
// the dataset index in place of the receipt id.
struct Row {
  int64_t index = 0;
  int64_t predicted = 0;
  int64_t label = 0;
  int64_t slot = 0;
};

absl::Status CheckIndex(int64_t index, int rank, int64_t slot, const PredictionCountInputs& in) {
  if (index >= 0 && index < static_cast<int64_t>(in.receipt_ids->size())) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("validation: rank ", rank, " slot ", slot, " names dataset index ", index,
                   ", not one of the ", in.receipt_ids->size(), " validation receipts"));
}

Prediction ToPrediction(const Row& row, int rank, const PredictionCountInputs& in) {
  Prediction p;
  p.receipt_id = (*in.receipt_ids)[row.index];
  p.predicted = static_cast<int>(row.predicted);
  p.label = static_cast<int>(row.label);
  p.rank = rank;
  p.slot = row.slot;
  return p;
}

// This rank's valid rows in (receipt id, slot) order.
absl::StatusOr<std::vector<Row>> SortedValidRows(const at::Tensor& mine,
                                                 const PredictionCountInputs& in) {
  std::vector<Row> rows;
  auto acc = mine.accessor<int64_t, 2>();
  for (int64_t slot = 0; slot < mine.size(0); ++slot) {
    if (acc[slot][3] == 0) continue;
    if (absl::Status s = CheckIndex(acc[slot][0], in.rank, slot, in); !s.ok()) return s;
    rows.push_back({acc[slot][0], acc[slot][1], acc[slot][2], slot});
  }
  const std::vector<std::string>& ids = *in.receipt_ids;
  std::sort(rows.begin(), rows.end(), [&ids](const Row& a, const Row& b) {
    return std::tie(ids[a.index], a.slot) < std::tie(ids[b.index], b.slot);
  });
  return rows;
}

// Rank 0's own sorted rows as a stream.
class LocalStream : public PredictionStream {
 public:
  LocalStream(std::vector<Row> rows, int64_t chunk, const PredictionCountInputs& in)
      : rows_(std::move(rows)), chunk_(static_cast<size_t>(chunk)), in_(in) {}

  absl::StatusOr<std::vector<Prediction>> NextChunk() override {
    const size_t end = std::min(rows_.size(), next_ + chunk_);
    std::vector<Prediction> out;
    out.reserve(end - next_);
    for (; next_ < end; ++next_) out.push_back(ToPrediction(rows_[next_], in_.rank, in_));
    return out;
  }

 private:
  std::vector<Row> rows_;
  size_t chunk_;
  size_t next_ = 0;
  const PredictionCountInputs& in_;
};

// Another rank's sorted rows, received a chunk at a time.
class RemoteStream : public PredictionStream {
 public:
  RemoteStream(int rank, int64_t chunk, const PredictionCountInputs& in)
      : rank_(rank), chunk_(chunk), remaining_(in.valid_rows[rank]), in_(in) {}

  absl::StatusOr<std::vector<Prediction>> NextChunk() override {
    if (remaining_ == 0) return std::vector<Prediction>();
    const int64_t n = std::min(chunk_, remaining_);
    at::Tensor received = at::empty({n, kPredictionColumns}, at::kLong);
    try {
      std::vector<at::Tensor> tensors = {received};
      in_.group->recv(tensors, rank_, kStreamTag)->wait();
    } catch (const std::exception& e) {
      return CollectiveErrorToStatus(
          e, absl::StrCat("validation: receiving rank ", rank_, "'s sorted predictions"));
    }
    remaining_ -= n;
    std::vector<Prediction> out;
    out.reserve(n);
    auto acc = received.accessor<int64_t, 2>();
    for (int64_t i = 0; i < n; ++i) {
      const Row row = {acc[i][0], acc[i][1], acc[i][2], acc[i][3]};
      if (absl::Status s = CheckIndex(row.index, rank_, row.slot, in_); !s.ok()) return s;
      out.push_back(ToPrediction(row, rank_, in_));
    }
    return out;
  }

 private:
  int rank_;
  int64_t chunk_;
  int64_t remaining_;
  const PredictionCountInputs& in_;
};

// A rank other than 0 sends its sorted rows, a chunk at a time; each send
// completes when rank 0 has received it.
absl::Status SendSortedRows(const std::vector<Row>& rows, int64_t chunk,
                            const PredictionCountInputs& in) {
  try {
    for (size_t first = 0; first < rows.size(); first += chunk) {
      const int64_t n = std::min<int64_t>(chunk, static_cast<int64_t>(rows.size() - first));
      at::Tensor out = at::empty({n, kPredictionColumns}, at::kLong);
      auto acc = out.accessor<int64_t, 2>();
      for (int64_t i = 0; i < n; ++i) {
        const Row& row = rows[first + i];
        acc[i][0] = row.index;
        acc[i][1] = row.predicted;
        acc[i][2] = row.label;
        acc[i][3] = row.slot;
      }
      std::vector<at::Tensor> tensors = {out};
      in.group->send(tensors, 0, kStreamTag)->wait();
    }
  } catch (const std::exception& e) {
    return CollectiveErrorToStatus(e, "validation: sending the sorted predictions to rank 0");
  }
  return absl::OkStatus();
}

// Rank 0's outcome, broadcast: every rank returns OK or fails with it.
absl::Status ShareOutcome(const absl::Status& rank0, const PredictionCountInputs& in) {
  if (in.group == nullptr) return rank0;
  at::Tensor code = at::full({1}, static_cast<int64_t>(rank0.code()), at::kLong);
  try {
    std::vector<at::Tensor> tensors = {code};
    c10d::BroadcastOptions options;
    options.rootRank = 0;
    in.group->broadcast(tensors, options)->wait();
  } catch (const std::exception& e) {
    return CollectiveErrorToStatus(e, "validation: sharing rank 0's merge outcome");
  }
  if (in.rank == 0) return rank0;
  const auto received = static_cast<absl::StatusCode>(code.item<int64_t>());
  if (received == absl::StatusCode::kOk) return absl::OkStatus();
  return absl::Status(received, absl::StrCat("validation (metric_dedup '", in.dedup_name,
                                             "'): rank 0's streamed merge refused the "
                                             "predictions; rank 0 reports why"));
}

absl::StatusOr<PredictionCount> MergeOnRankZero(std::vector<Row> mine, int64_t chunk,
                                                const PredictionCountInputs& in) {
  std::vector<std::unique_ptr<PredictionStream>> owned;
  owned.push_back(std::make_unique<LocalStream>(std::move(mine), chunk, in));
  for (int r = 1; r < in.world_size; ++r) {
    owned.push_back(std::make_unique<RemoteStream>(r, chunk, in));
  }
  std::vector<PredictionStream*> streams;
  for (const auto& s : owned) streams.push_back(s.get());
  ValidationReportBuilder builder(in.label_names, in.dedup_name, in.receipt_rows);
  absl::StatusOr<StreamMergeCounts> counts = MergeSortedPredictionStreams(
      streams, in.dedup_name, [&builder](const Prediction& p) { return builder.Add(p); });
  if (!counts.ok()) {
    return absl::Status(counts.status().code(),
                        absl::StrCat("validation (metric_dedup '", in.dedup_name,
                                     "'): ", counts.status().message()));
  }
  LOG(INFO) << "validation: " << counts->merged << " predictions of " << in.world_size
            << " rank(s) counted by the streamed merge in chunks of " << chunk << ", at most "
            << counts->peak_held << " held at once";
  PredictionCount out;
  out.merge_chunk = chunk;
  out.peak_held = counts->peak_held;
  absl::StatusOr<ValidationReport> report =
      std::move(builder).Finish(counts->merged, counts->duplicates_dropped);
  if (!report.ok()) return report.status();
  out.report = *std::move(report);
  return out;
}

absl::StatusOr<PredictionCount> CountStreamed(const at::Tensor& mine, int64_t chunk,
                                              const PredictionCountInputs& in) {
  absl::StatusOr<std::vector<Row>> rows = SortedValidRows(mine, in);
  if (!rows.ok()) return rows.status();
  if (in.rank != 0) {
    if (absl::Status s = SendSortedRows(*rows, chunk, in); !s.ok()) return s;
    if (absl::Status s = ShareOutcome(absl::OkStatus(), in); !s.ok()) return s;
    PredictionCount only_rank_zero_has_the_report;
    only_rank_zero_has_the_report.report.set_dedup(in.dedup_name);
    only_rank_zero_has_the_report.merge_chunk = chunk;
    return only_rank_zero_has_the_report;
  }
  absl::StatusOr<PredictionCount> count = MergeOnRankZero(*std::move(rows), chunk, in);
  if (absl::Status s = ShareOutcome(count.status(), in); !s.ok()) return s;
  return count;
}

absl::StatusOr<PredictionCount> CountGathered(const at::Tensor& mine,
                                              const PredictionCountInputs& in) {
  std::vector<at::Tensor> per_rank;
  try {
    if (in.group == nullptr || mine.size(0) == 0) {
      // Every rank has as many rows (from the plan), so all skip the
      // collective together when there is nothing to gather.
      per_rank.push_back(mine);
    } else {
      std::vector<std::vector<at::Tensor>> outputs(1);
      for (int r = 0; r < in.world_size; ++r) outputs[0].push_back(at::empty_like(mine));
      std::vector<at::Tensor> inputs = {mine};
      in.group->allgather(outputs, inputs)->wait();
      per_rank = outputs[0];
    }
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "validation: gathering predictions failed",
                                 absl::StatusCode::kUnavailable);
  }
  std::vector<Prediction> gathered;
  for (int r = 0; r < static_cast<int>(per_rank.size()); ++r) {
    auto acc = per_rank[r].accessor<int64_t, 2>();
    for (int64_t slot = 0; slot < per_rank[r].size(0); ++slot) {
      if (acc[slot][3] == 0) continue;
      if (absl::Status s = CheckIndex(acc[slot][0], r, slot, in); !s.ok()) return s;
      gathered.push_back(ToPrediction({acc[slot][0], acc[slot][1], acc[slot][2], slot}, r, in));
    }
  }
  per_rank = {};
  const auto gathered_count = static_cast<int64_t>(gathered.size());
  absl::StatusOr<DedupResult> dedup = in.dedup->Dedup(gathered);
  if (!dedup.ok()) {
    return absl::Status(dedup.status().code(),
                        absl::StrCat("validation (metric_dedup '", in.dedup_name,
                                     "'): ", dedup.status().message()));
  }
  gathered = {};  // counted from dedup->counted from here
  absl::StatusOr<ValidationReport> report = BuildValidationReport(
      *dedup, gathered_count, in.label_names, in.dedup_name, in.receipt_rows);
  if (!report.ok()) return report.status();
  PredictionCount out;
  out.report = *std::move(report);
  return out;
}

// Which merge the pass uses: 0 = gathered, else the streamed merge's chunk.
int64_t ChosenMergeChunk(const PredictionCountInputs& in) {
  const int64_t total = std::accumulate(in.valid_rows.begin(), in.valid_rows.end(), int64_t{0});
  return in.dedup->StreamedMergeChunk(total);
}

}  // namespace

absl::StatusOr<PredictionCount> CountPredictionsOnce(const at::Tensor& mine,
                                                     const PredictionCountInputs& in) {
  if (static_cast<int>(in.valid_rows.size()) != in.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("validation: ", in.valid_rows.size(),
                                                   " ranks' valid row counts for a world of ",
                                                   in.world_size));
  }
  const int64_t chunk = ChosenMergeChunk(in);
  if (chunk > 0) return CountStreamed(mine, chunk, in);
  return CountGathered(mine, in);
}

}  // namespace receipt_parity
