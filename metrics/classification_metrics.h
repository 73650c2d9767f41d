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
absl::StatusOr<ValidationReport> BuildValidationReport(
    const DedupResult& dedup, int64_t predictions_gathered,
    const std::vector<std::string>& label_names, const std::string& dedup_name);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_METRICS_CLASSIFICATION_METRICS_H_
