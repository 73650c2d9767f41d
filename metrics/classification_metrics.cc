#include "metrics/classification_metrics.h"

#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace receipt_parity {
namespace {

// numerator / denominator, 0 when the denominator is 0.
double SafeRatio(double numerator, double denominator) {
  return denominator == 0 ? 0.0 : numerator / denominator;
}

bool FitsInt32(int64_t value) {
  return value >= 0 && value <= std::numeric_limits<int32_t>::max();
}

absl::Status CheckClass(const Prediction& p, const char* field, int value,
                        size_t num_classes) {
  if (value >= 0 && static_cast<size_t>(value) < num_classes) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("validation prediction of receipt '", p.receipt_id,
                   "' (rank ", p.rank, " slot ", p.slot, "): ", field, " ",
                   value, " is not a class index in [0, ", num_classes, ")"));
}

}  // namespace

ValidationReportBuilder::ValidationReportBuilder(std::vector<std::string> label_names,
                                                 std::string dedup_name, bool receipt_rows)
    : label_names_(std::move(label_names)),
      dedup_name_(std::move(dedup_name)),
      receipt_rows_(receipt_rows),
      confusion_(label_names_.size(), std::vector<int64_t>(label_names_.size(), 0)) {}

absl::Status ValidationReportBuilder::Add(const Prediction& p) {
  const size_t num_classes = label_names_.size();
  if (absl::Status s = CheckClass(p, "label", p.label, num_classes); !s.ok()) return s;
  if (absl::Status s = CheckClass(p, "predicted", p.predicted, num_classes); !s.ok()) return s;
  if (counted_ > 0 && p.receipt_id < last_id_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "validation prediction of receipt '", p.receipt_id, "' (rank ", p.rank, " slot ", p.slot,
        ") comes after receipt '", last_id_,
        "': the counted predictions are not sorted by receipt id"));
  }
  if (counted_ == 0 || p.receipt_id != last_id_) {
    ++unique_ids_;
    last_id_ = p.receipt_id;
  }
  ++counted_;
  ++confusion_[p.label][p.predicted];
  if (!receipt_rows_) return absl::OkStatus();
  ReceiptPrediction* row = report_.add_predictions();
  row->set_receipt_id(p.receipt_id);
  row->set_label(label_names_[p.label]);
  row->set_predicted(label_names_[p.predicted]);
  row->set_correct(p.label == p.predicted);
  row->set_rank(p.rank);
  return absl::OkStatus();
}

absl::StatusOr<ValidationReport> ValidationReportBuilder::Finish(int64_t predictions_gathered,
                                                                 int64_t duplicates_dropped) && {
  const size_t num_classes = label_names_.size();
  if (num_classes == 0) {
    return absl::InvalidArgumentError("validation report: label_names is empty");
  }
  if (predictions_gathered != counted_ + duplicates_dropped) {
    return absl::InvalidArgumentError(absl::StrCat(
        "validation report (dedup '", dedup_name_, "'): predictions_gathered ",
        predictions_gathered, " != counted ", counted_, " + duplicates_dropped ",
        duplicates_dropped));
  }
  if (!FitsInt32(predictions_gathered) || !FitsInt32(counted_) ||
      !FitsInt32(duplicates_dropped)) {
    return absl::InvalidArgumentError(
        absl::StrCat("validation report: counts out of range (gathered ", predictions_gathered,
                     ", counted ", counted_, ", duplicates dropped ", duplicates_dropped, ")"));
  }
  ValidationReport report = std::move(report_);
  report.set_dedup(dedup_name_);
  report.set_predictions_gathered(static_cast<int32_t>(predictions_gathered));
  report.set_unique_ids_counted(static_cast<int32_t>(unique_ids_));
  report.set_duplicates_dropped(static_cast<int32_t>(duplicates_dropped));
  report.set_predictions_counted(static_cast<int32_t>(counted_));

  int64_t correct = 0;
  double f1_sum = 0;
  for (size_t c = 0; c < num_classes; ++c) {
    int64_t support = 0;
    int64_t predicted = 0;
    for (size_t other = 0; other < num_classes; ++other) {
      support += confusion_[c][other];
      predicted += confusion_[other][c];
    }
    const int64_t true_positives = confusion_[c][c];
    correct += true_positives;

    ClassMetrics* metrics = report.add_per_class();
    metrics->set_label(label_names_[c]);
    metrics->set_support(static_cast<int32_t>(support));
    metrics->set_predicted(static_cast<int32_t>(predicted));
    metrics->set_precision(SafeRatio(true_positives, predicted));
    metrics->set_recall(SafeRatio(true_positives, support));
    metrics->set_f1(SafeRatio(2 * metrics->precision() * metrics->recall(),
                              metrics->precision() + metrics->recall()));
    f1_sum += metrics->f1();

    ConfusionRow* row = report.add_confusion_matrix();
    row->set_label(label_names_[c]);
    for (int64_t count : confusion_[c]) row->add_counts(static_cast<int32_t>(count));
    report.add_label_names(label_names_[c]);
  }
  report.set_confusion_matrix_axes(
      "rows: true label, columns: predicted label, both in label_names order");
  report.set_accuracy(SafeRatio(correct, counted_));
  report.set_macro_f1(f1_sum / num_classes);
  return report;
}

absl::StatusOr<ValidationReport> BuildValidationReport(
    const DedupResult& dedup, int64_t predictions_gathered,
    const std::vector<std::string>& label_names,
    const std::string& dedup_name, bool receipt_rows) {
  if (label_names.empty()) {
    return absl::InvalidArgumentError("validation report: label_names is empty");
  }
  ValidationReportBuilder builder(label_names, dedup_name, receipt_rows);
  for (const Prediction& p : dedup.counted) {
    if (absl::Status s = builder.Add(p); !s.ok()) return s;
  }
  return std::move(builder).Finish(predictions_gathered, dedup.duplicates_dropped);
}

}  // namespace receipt_parity
