#include "metrics/classification_metrics.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "io/json_file.h"
#include "metrics/by_receipt_id_dedup.h"
#include "metrics/none_dedup.h"

namespace receipt_parity {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

const std::vector<std::string> kLabels = {"ok", "blurred", "faded", "cropped"};
constexpr int kOk = 0, kBlurred = 1, kFaded = 2;

// 9 receipts, one prediction each (predicted, label):
//   label ok:      ok x3, blurred x1
//   label blurred: blurred x2, ok x1
//   label faded:   faded x1, blurred x1
//   cropped:       neither present nor predicted.
DedupResult HandExample() {
  const std::vector<std::pair<int, int>> pairs = {
      {kOk, kOk},      {kOk, kOk},           {kOk, kOk},
      {kBlurred, kOk}, {kBlurred, kBlurred}, {kBlurred, kBlurred},
      {kOk, kBlurred}, {kFaded, kFaded},     {kBlurred, kFaded}};
  DedupResult result;
  for (size_t i = 0; i < pairs.size(); ++i) {
    result.counted.push_back({absl::StrCat("r", i), pairs[i].first,
                              pairs[i].second, static_cast<int>(i % 2),
                              static_cast<int64_t>(i / 2)});
  }
  return result;
}

TEST(ClassificationMetricsTest, HandComputedExample) {
  absl::StatusOr<ValidationReport> report =
      BuildValidationReport(HandExample(), 9, kLabels, "by_receipt_id");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->dedup(), "by_receipt_id");
  EXPECT_EQ(report->predictions_gathered(), 9);
  EXPECT_EQ(report->predictions_counted(), 9);
  EXPECT_EQ(report->unique_ids_counted(), 9);
  EXPECT_EQ(report->duplicates_dropped(), 0);
  EXPECT_DOUBLE_EQ(report->accuracy(), 6.0 / 9);

  ASSERT_EQ(report->per_class_size(), 4);
  const ClassMetrics& ok = report->per_class(0);
  EXPECT_EQ(ok.label(), "ok");
  EXPECT_EQ(ok.support(), 4);
  EXPECT_EQ(ok.predicted(), 4);
  EXPECT_DOUBLE_EQ(ok.precision(), 0.75);
  EXPECT_DOUBLE_EQ(ok.recall(), 0.75);
  EXPECT_DOUBLE_EQ(ok.f1(), 0.75);

  const ClassMetrics& blurred = report->per_class(1);
  EXPECT_EQ(blurred.support(), 3);
  EXPECT_EQ(blurred.predicted(), 4);
  EXPECT_DOUBLE_EQ(blurred.precision(), 0.5);
  EXPECT_DOUBLE_EQ(blurred.recall(), 2.0 / 3);
  EXPECT_DOUBLE_EQ(blurred.f1(), 4.0 / 7);  // 2 * (1/2)(2/3) / (7/6)

  const ClassMetrics& faded = report->per_class(2);
  EXPECT_EQ(faded.support(), 2);
  EXPECT_DOUBLE_EQ(faded.precision(), 1.0);
  EXPECT_DOUBLE_EQ(faded.recall(), 0.5);
  EXPECT_DOUBLE_EQ(faded.f1(), 2.0 / 3);

  // No support and never predicted: 0, not NaN.
  const ClassMetrics& cropped = report->per_class(3);
  EXPECT_EQ(cropped.label(), "cropped");
  EXPECT_EQ(cropped.support(), 0);
  EXPECT_EQ(cropped.predicted(), 0);
  EXPECT_EQ(cropped.precision(), 0.0);
  EXPECT_EQ(cropped.recall(), 0.0);
  EXPECT_EQ(cropped.f1(), 0.0);

  EXPECT_DOUBLE_EQ(report->macro_f1(), (0.75 + 4.0 / 7 + 2.0 / 3 + 0) / 4);

  ASSERT_EQ(report->confusion_matrix_size(), 4);
  EXPECT_EQ(report->confusion_matrix(0).label(), "ok");
  EXPECT_THAT(report->confusion_matrix(0).counts(), ElementsAre(3, 1, 0, 0));
  EXPECT_THAT(report->confusion_matrix(1).counts(), ElementsAre(1, 2, 0, 0));
  EXPECT_THAT(report->confusion_matrix(2).counts(), ElementsAre(0, 1, 1, 0));
  EXPECT_THAT(report->confusion_matrix(3).counts(), ElementsAre(0, 0, 0, 0));
  EXPECT_THAT(report->label_names(),
              ElementsAre("ok", "blurred", "faded", "cropped"));
}

TEST(ClassificationMetricsTest, ListsEveryCountedReceiptAndNamesTheAxes) {
  absl::StatusOr<ValidationReport> report =
      BuildValidationReport(HandExample(), 9, kLabels, "by_receipt_id");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->confusion_matrix_axes(), HasSubstr("rows: true label"));
  EXPECT_THAT(report->confusion_matrix_axes(), HasSubstr("columns: predicted label"));
  ASSERT_EQ(report->predictions_size(), 9);
  // r3: label ok, predicted blurred (HandExample's {kBlurred, kOk}).
  const ReceiptPrediction& wrong = report->predictions(3);
  EXPECT_EQ(wrong.receipt_id(), "r3");
  EXPECT_EQ(wrong.label(), "ok");
  EXPECT_EQ(wrong.predicted(), "blurred");
  EXPECT_FALSE(wrong.correct());
  EXPECT_EQ(wrong.rank(), 1);
  int correct = 0;
  for (const ReceiptPrediction& p : report->predictions()) correct += p.correct();
  EXPECT_EQ(correct, 6);  // accuracy 6/9
}

TEST(ClassificationMetricsTest, PredictedClassWithoutSupportHasZeroScores) {
  DedupResult result;
  result.counted = {{"a", 1, 0, 0, 0}, {"b", 0, 0, 0, 1}};
  absl::StatusOr<ValidationReport> report =
      BuildValidationReport(result, 2, {"x", "y"}, "none");
  ASSERT_TRUE(report.ok()) << report.status();
  const ClassMetrics& y = report->per_class(1);
  EXPECT_EQ(y.support(), 0);
  EXPECT_EQ(y.predicted(), 1);
  EXPECT_EQ(y.precision(), 0.0);
  EXPECT_EQ(y.recall(), 0.0);
  EXPECT_EQ(y.f1(), 0.0);
  EXPECT_FALSE(std::isnan(report->macro_f1()));
  EXPECT_DOUBLE_EQ(report->per_class(0).f1(), 2.0 / 3);  // p 1, r 1/2
}

TEST(ClassificationMetricsTest, NothingCountedGivesZerosNotNaN) {
  absl::StatusOr<ValidationReport> report =
      BuildValidationReport(DedupResult(), 0, kLabels, "by_receipt_id");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->accuracy(), 0.0);
  EXPECT_EQ(report->macro_f1(), 0.0);
  EXPECT_THAT(ToJson(*report),
              AllOf(Not(HasSubstr("NaN")), Not(HasSubstr("nan"))));
}

// A duplicate_pad gather: receipt "r0" (label ok, predicted ok) is the pad
// and appears twice. by_receipt_id counts it once; none inflates ok.
TEST(ClassificationMetricsTest, DedupDecidesTheSupport) {
  const std::vector<Prediction> gathered = {{"r0", kOk, kOk, 0, 0},
                                            {"r1", kBlurred, kOk, 1, 0},
                                            {"r2", kFaded, kFaded, 0, 1},
                                            {"r0", kOk, kOk, 1, 1}};

  absl::StatusOr<DedupResult> once = ByReceiptIdDedup().Dedup(gathered);
  ASSERT_TRUE(once.ok()) << once.status();
  absl::StatusOr<ValidationReport> deduplicated = BuildValidationReport(
      *once, gathered.size(), kLabels, ByReceiptIdDedup::kName);
  ASSERT_TRUE(deduplicated.ok()) << deduplicated.status();
  EXPECT_EQ(deduplicated->predictions_gathered(), 4);
  EXPECT_EQ(deduplicated->unique_ids_counted(), 3);
  EXPECT_EQ(deduplicated->duplicates_dropped(), 1);
  EXPECT_EQ(deduplicated->predictions_counted(), 3);
  EXPECT_EQ(deduplicated->per_class(kOk).support(), 2);
  EXPECT_DOUBLE_EQ(deduplicated->accuracy(), 2.0 / 3);

  absl::StatusOr<DedupResult> all = NoneDedup().Dedup(gathered);
  ASSERT_TRUE(all.ok()) << all.status();
  absl::StatusOr<ValidationReport> naive =
      BuildValidationReport(*all, gathered.size(), kLabels, NoneDedup::kName);
  ASSERT_TRUE(naive.ok()) << naive.status();
  EXPECT_EQ(naive->dedup(), "none");
  EXPECT_EQ(naive->unique_ids_counted(), 3);
  EXPECT_EQ(naive->duplicates_dropped(), 0);
  EXPECT_EQ(naive->predictions_counted(), 4);
  EXPECT_EQ(naive->per_class(kOk).support(), 3);  // inflated
  EXPECT_DOUBLE_EQ(naive->accuracy(), 3.0 / 4);
}

TEST(ClassificationMetricsTest, JsonCarriesEveryKeyAndRoundTrips) {
  absl::StatusOr<ValidationReport> report =
      BuildValidationReport(HandExample(), 9, kLabels, "by_receipt_id");
  ASSERT_TRUE(report.ok()) << report.status();
  const std::string json = ToJson(*report);
  for (const char* key :
       {"dedup", "predictions_gathered", "unique_ids_counted",
        "duplicates_dropped", "predictions_counted", "accuracy", "macro_f1",
        "per_class", "label", "support", "predicted", "precision", "recall",
        "f1", "confusion_matrix", "counts", "label_names"}) {
    EXPECT_THAT(json, HasSubstr(absl::StrCat("\"", key, "\":"))) << key;
  }
  // Counts are JSON numbers, not strings.
  EXPECT_THAT(json, HasSubstr("\"predictions_gathered\": 9"));

  const std::string path =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/validation.json");
  ASSERT_TRUE(WriteJsonFile(path, *report).ok());
  ValidationReport read;
  ASSERT_TRUE(ReadJsonFile(path, &read).ok());
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(read, *report));
}

TEST(ClassificationMetricsTest, ClassOutOfRangeNamesThePrediction) {
  DedupResult result = HandExample();
  result.counted[4].label = 4;
  absl::StatusOr<ValidationReport> report =
      BuildValidationReport(result, 9, kLabels, "by_receipt_id");
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(report.status().message(),
              AllOf(HasSubstr("receipt 'r4'"), HasSubstr("rank 0 slot 2"),
                    HasSubstr("label 4 is not a class index in [0, 4)")));

  result = HandExample();
  result.counted[1].predicted = -1;
  report = BuildValidationReport(result, 9, kLabels, "by_receipt_id");
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(report.status().message(),
              AllOf(HasSubstr("receipt 'r1'"), HasSubstr("predicted -1")));
}

TEST(ClassificationMetricsTest, InconsistentCountsAreRefused) {
  DedupResult result = HandExample();
  result.duplicates_dropped = 2;
  absl::StatusOr<ValidationReport> report =
      BuildValidationReport(result, 9, kLabels, "by_receipt_id");
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(report.status().message(),
              HasSubstr("predictions_gathered 9 != counted 9 + "
                        "duplicates_dropped 2"));
}

TEST(ClassificationMetricsTest, TheBuilderOneAtATimeGivesTheSameReport) {
  const DedupResult hand = HandExample();
  ValidationReportBuilder builder(kLabels, "by_receipt_id");
  for (const Prediction& p : hand.counted) ASSERT_TRUE(builder.Add(p).ok());
  absl::StatusOr<ValidationReport> built = std::move(builder).Finish(9, 0);
  ASSERT_TRUE(built.ok()) << built.status();
  absl::StatusOr<ValidationReport> whole = BuildValidationReport(hand, 9, kLabels, "by_receipt_id");
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*built, *whole));
  EXPECT_EQ(built->unique_ids_counted(), 9);
}

TEST(ClassificationMetricsTest, CountedPredictionsOutOfReceiptIdOrderAreRefused) {
  DedupResult result = HandExample();
  std::swap(result.counted[2], result.counted[3]);
  absl::StatusOr<ValidationReport> report =
      BuildValidationReport(result, 9, kLabels, "by_receipt_id");
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(report.status().message(),
              AllOf(HasSubstr("receipt 'r2'"), HasSubstr("comes after receipt 'r3'"),
                    HasSubstr("not sorted by receipt id")));
}

TEST(ClassificationMetricsTest, EmptyLabelNamesAreRefused) {
  absl::StatusOr<ValidationReport> report =
      BuildValidationReport(DedupResult(), 0, {}, "none");
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(report.status().message(), HasSubstr("label_names is empty"));
}

}  // namespace
}  // namespace receipt_parity
