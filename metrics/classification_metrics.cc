#include "metrics/classification_metrics.h"

#include <limits>
#include <set>

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

// Every counted receipt, as its report row.
// REQUIRES: every label and prediction is a class of `label_names`.
void AddPredictions(const DedupResult& dedup, const std::vector<std::string>& label_names,
                    ValidationReport* report) {
  for (const Prediction& p : dedup.counted) {
    ReceiptPrediction* row = report->add_predictions();
    row->set_receipt_id(p.receipt_id);
    row->set_label(label_names[p.label]);
    row->set_predicted(label_names[p.predicted]);
    row->set_correct(p.label == p.predicted);
    row->set_rank(p.rank);
  }
}

}  // namespace

absl::StatusOr<ValidationReport> BuildValidationReport(
    const DedupResult& dedup, int64_t predictions_gathered,
    const std::vector<std::string>& label_names,
    const std::string& dedup_name) {
  const size_t num_classes = label_names.size();
  if (num_classes == 0) {
    return absl::InvalidArgumentError(
        "validation report: label_names is empty");
  }
  const int64_t counted = static_cast<int64_t>(dedup.counted.size());
  if (predictions_gathered != counted + dedup.duplicates_dropped) {
    return absl::InvalidArgumentError(absl::StrCat(
        "validation report (dedup '", dedup_name, "'): predictions_gathered ",
        predictions_gathered, " != counted ", counted, " + duplicates_dropped ",
        dedup.duplicates_dropped));
  }
  if (!FitsInt32(predictions_gathered) || !FitsInt32(counted) ||
      !FitsInt32(dedup.duplicates_dropped)) {
    return absl::InvalidArgumentError(
        absl::StrCat("validation report: counts out of range (gathered ",
                     predictions_gathered, ", counted ", counted,
                     ", duplicates dropped ", dedup.duplicates_dropped, ")"));
  }

  // confusion[label][predicted]
  std::vector<std::vector<int32_t>> confusion(
      num_classes, std::vector<int32_t>(num_classes, 0));
  std::set<std::string> unique_ids;
  for (const Prediction& p : dedup.counted) {
    if (absl::Status s = CheckClass(p, "label", p.label, num_classes);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckClass(p, "predicted", p.predicted, num_classes);
        !s.ok()) {
      return s;
    }
    ++confusion[p.label][p.predicted];
    unique_ids.insert(p.receipt_id);
  }

  ValidationReport report;
  AddPredictions(dedup, label_names, &report);
  report.set_dedup(dedup_name);
  report.set_predictions_gathered(static_cast<int32_t>(predictions_gathered));
  report.set_unique_ids_counted(static_cast<int32_t>(unique_ids.size()));
  report.set_duplicates_dropped(static_cast<int32_t>(dedup.duplicates_dropped));
  report.set_predictions_counted(static_cast<int32_t>(counted));

  int64_t correct = 0;
  double f1_sum = 0;
  for (size_t c = 0; c < num_classes; ++c) {
    int32_t support = 0;
    int32_t predicted = 0;
    for (size_t other = 0; other < num_classes; ++other) {
      support += confusion[c][other];
      predicted += confusion[other][c];
    }
    const int32_t true_positives = confusion[c][c];
    correct += true_positives;

    ClassMetrics* metrics = report.add_per_class();
    metrics->set_label(label_names[c]);
    metrics->set_support(support);
    metrics->set_predicted(predicted);
    metrics->set_precision(SafeRatio(true_positives, predicted));
    metrics->set_recall(SafeRatio(true_positives, support));
    metrics->set_f1(SafeRatio(2 * metrics->precision() * metrics->recall(),
                              metrics->precision() + metrics->recall()));
    f1_sum += metrics->f1();

    ConfusionRow* row = report.add_confusion_matrix();
    row->set_label(label_names[c]);
    for (int32_t count : confusion[c]) row->add_counts(count);
    report.add_label_names(label_names[c]);
  }
  report.set_confusion_matrix_axes(
      "rows: true label, columns: predicted label, both in label_names order");
  report.set_accuracy(SafeRatio(correct, counted));
  report.set_macro_f1(f1_sum / num_classes);
  return report;
}

}  // namespace receipt_parity
