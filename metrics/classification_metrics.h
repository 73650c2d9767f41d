// Classification metrics of deduplicated validation predictions: the
// `validation.json` report (metrics/validation_report.proto).
//
//   absl::StatusOr<DedupResult> dedup = plugin->Dedup(gathered);
//   absl::StatusOr<ValidationReport> report = BuildValidationReport(
//       *dedup, gathered.size(), label_names, selection.name());
//   WriteJsonFile(out + "/validation.json", *report);   // io/json_file.h
//
// Thread safety: a pure function.
#ifndef RECEIPT_PARITY_METRICS_CLASSIFICATION_METRICS_H_
#define RECEIPT_PARITY_METRICS_CLASSIFICATION_METRICS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "metrics/metric_dedup.h"
#include "metrics/validation_report.pb.h"

namespace receipt_parity {

// Builds the report of `dedup.counted`: accuracy, macro F1, per-class
// support / precision / recall / F1 (0, never NaN, when undefined), the
// confusion matrix (rows = label, columns = predicted; the report says
// so in confusion_matrix_axes), every counted receipt's id, label and
// prediction (in `dedup.counted`'s order), and the counts
// (predictions_gathered, unique ids, duplicates dropped, counted).
//
// `label_names[i]` names class i. `dedup_name` is recorded as `dedup`.
// InvalidArgument (naming the receipt id, rank and slot, or the numbers)
// when:
//   - label_names is empty;
//   - a counted prediction's predicted class or label is not in
//     [0, label_names.size());
//   - predictions_gathered != counted + duplicates_dropped (the dedup
//     result is not of these gathered predictions);
//   - a count does not fit the report's int32 fields.
//   - `dedup.counted` is not sorted by receipt id (MetricDedup's contract).
// `receipt_rows` false leaves out `predictions` (ValidationReportBuilder).
absl::StatusOr<ValidationReport> BuildValidationReport(
    const DedupResult& dedup, int64_t predictions_gathered,
    const std::vector<std::string>& label_names, const std::string& dedup_name,
    bool receipt_rows = true);

// The same report built one counted prediction at a time, holding the
// confusion matrix and the report's rows, not the predictions: what the
// sorted streaming merge (metrics/sorted_stream_merge.h) feeds.
// BuildValidationReport is this builder over `dedup.counted`.
//
//   ValidationReportBuilder builder(label_names, "by_receipt_id");
//   for (...) RETURN_IF_ERROR(builder.Add(p));
//   absl::StatusOr<ValidationReport> report =
//       std::move(builder).Finish(predictions_gathered, duplicates_dropped);
class ValidationReportBuilder {
 public:
  // `receipt_rows` false: the report leaves out `predictions`, the one
  // part that grows with the counted receipts (for measuring the count).
  ValidationReportBuilder(std::vector<std::string> label_names, std::string dedup_name,
                          bool receipt_rows = true);

  // Counts `p`. InvalidArgument (naming the receipt, rank and slot) when
  // its predicted class or label is not a class of label_names, or its
  // receipt id sorts before the previous one's.
  absl::Status Add(const Prediction& p);

  // The report; InvalidArgument as BuildValidationReport for the counts and
  // an empty label_names.
  absl::StatusOr<ValidationReport> Finish(int64_t predictions_gathered,
                                          int64_t duplicates_dropped) &&;

 private:
  std::vector<std::string> label_names_;
  std::string dedup_name_;
  bool receipt_rows_;
  // confusion_[label][predicted]
  std::vector<std::vector<int64_t>> confusion_;
  int64_t counted_ = 0;
  int64_t unique_ids_ = 0;
  std::string last_id_;
  ValidationReport report_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_METRICS_CLASSIFICATION_METRICS_H_
