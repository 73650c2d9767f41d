// The two merges of validation predictions on a real Gloo group (ranks as
// threads): the streamed merge gives rank 0 the report the gathered path
// gives, and every rank fails when copies disagree.
#include "metrics/prediction_count.h"

#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collectives/local_process_group.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "metrics/by_receipt_id_dedup.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

const std::vector<std::string> kLabels = {"ok", "blurred", "faded"};

// `ids` receipts dealt round robin to `ranks` ranks, the first `pads`
// dealt again (duplicate_pad style), padded to equal rows with invalid
// ones; receipt ids out of index order so that the sort matters.
struct Deal {
  std::vector<std::string> receipt_ids;
  std::vector<at::Tensor> rows;  // by rank
  std::vector<int64_t> valid_rows;
};

Deal MakeDeal(int ranks, int ids, int pads) {
  Deal deal;
  for (int i = 0; i < ids; ++i) deal.receipt_ids.push_back(absl::StrCat("r", (i * 37) % 101, "-", i));
  std::vector<std::vector<std::vector<int64_t>>> per_rank(ranks);
  for (int position = 0; position < ids + pads; ++position) {
    const int index = position % ids;
    per_rank[position % ranks].push_back({index, index % 3, (index / 2) % 3, 1});
  }
  size_t rows = 0;
  for (const auto& r : per_rank) rows = std::max(rows, r.size());
  for (const auto& r : per_rank) {
    at::Tensor t = at::zeros({static_cast<int64_t>(rows), kPredictionColumns}, at::kLong);
    auto acc = t.accessor<int64_t, 2>();
    for (size_t i = 0; i < r.size(); ++i) {
      for (int c = 0; c < kPredictionColumns; ++c) acc[i][c] = r[i][c];
    }
    deal.rows.push_back(t);
    deal.valid_rows.push_back(static_cast<int64_t>(r.size()));
  }
  return deal;
}

struct RankOutcome {
  absl::StatusOr<PredictionCount> count = absl::UnknownError("not run");
};

std::vector<RankOutcome> CountOnGroup(const Deal& deal, const MetricDedup& dedup,
                                      bool receipt_rows = true) {
  const int world = static_cast<int>(deal.rows.size());
  std::vector<RankOutcome> outcomes(world);
  absl::Status run = RunOnLocalGroup(world, [&](int rank, c10d::ProcessGroup& group) {
    PredictionCountInputs in;
    in.receipt_ids = &deal.receipt_ids;
    in.label_names = kLabels;
    in.dedup = &dedup;
    in.dedup_name = "by_receipt_id";
    in.rank = rank;
    in.world_size = world;
    in.group = world > 1 ? &group : nullptr;
    in.valid_rows = deal.valid_rows;
    in.receipt_rows = receipt_rows;
    outcomes[rank].count = CountPredictionsOnce(deal.rows[rank], in);
    return absl::OkStatus();
  });
  EXPECT_TRUE(run.ok()) << run;
  return outcomes;
}

ByReceiptIdDedup Streamed(int64_t chunk) {
  ReceiptMergeChoice choice;
  choice.merge = ReceiptMerge::kStreamed;
  choice.chunk_rows = chunk;
  return ByReceiptIdDedup(choice);
}

ByReceiptIdDedup Gathered() {
  ReceiptMergeChoice choice;
  choice.merge = ReceiptMerge::kGathered;
  return ByReceiptIdDedup(choice);
}

TEST(PredictionCountTest, StreamedGivesRankZeroTheGatheredReport) {
  for (int world : {1, 2, 3}) {
    const Deal deal = MakeDeal(world, 47, world - 1);
    const std::vector<RankOutcome> gathered = CountOnGroup(deal, Gathered());
    ASSERT_TRUE(gathered[0].count.ok()) << gathered[0].count.status();
    EXPECT_EQ(gathered[0].count->report.unique_ids_counted(), 47);
    EXPECT_EQ(gathered[0].count->report.duplicates_dropped(), world - 1);
    EXPECT_EQ(gathered[0].count->merge_chunk, 0);
    for (int64_t chunk : {1, 4, 4096}) {
      SCOPED_TRACE(absl::StrCat(world, " ranks, chunk ", chunk));
      const std::vector<RankOutcome> streamed = CountOnGroup(deal, Streamed(chunk));
      ASSERT_TRUE(streamed[0].count.ok()) << streamed[0].count.status();
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(streamed[0].count->report,
                                                                     gathered[0].count->report))
          << streamed[0].count->report.DebugString() << "\nvs\n"
          << gathered[0].count->report.DebugString();
      EXPECT_EQ(streamed[0].count->merge_chunk, chunk);
      // A chunk per rank (or every prediction, when fewer) and one
      // receipt's copies (two at most here).
      EXPECT_GT(streamed[0].count->peak_held, 0);
      EXPECT_LE(streamed[0].count->peak_held, std::min<int64_t>(world * chunk, 47 + world - 1) + 2);
      for (int r = 1; r < world; ++r) {
        ASSERT_TRUE(streamed[r].count.ok()) << streamed[r].count.status();
        EXPECT_EQ(streamed[r].count->report.dedup(), "by_receipt_id");
        EXPECT_EQ(streamed[r].count->report.predictions_size(), 0);
      }
    }
  }
}

TEST(PredictionCountTest, WithoutReceiptRowsOnlyThePerReceiptListIsLeftOut) {
  const Deal deal = MakeDeal(2, 47, 1);
  for (const ByReceiptIdDedup& dedup : {Gathered(), Streamed(5)}) {
    const std::vector<RankOutcome> with_rows = CountOnGroup(deal, dedup);
    const std::vector<RankOutcome> without = CountOnGroup(deal, dedup, /*receipt_rows=*/false);
    ASSERT_TRUE(with_rows[0].count.ok() && without[0].count.ok());
    EXPECT_EQ(with_rows[0].count->report.predictions_size(), 47);
    ValidationReport expected = with_rows[0].count->report;
    expected.clear_predictions();
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(without[0].count->report,
                                                                   expected));
  }
}

TEST(PredictionCountTest, DisagreeingCopiesFailEveryRank) {
  Deal deal = MakeDeal(2, 9, 1);
  // Rank 1's pad (index 0, slot 4) says another class than rank 0's copy.
  deal.rows[1].accessor<int64_t, 2>()[4][1] = 2;
  const std::vector<RankOutcome> gathered = CountOnGroup(deal, Gathered());
  const std::vector<RankOutcome> streamed = CountOnGroup(deal, Streamed(2));
  ASSERT_EQ(gathered[0].count.status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_EQ(streamed[0].count.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(streamed[0].count.status().message(), gathered[0].count.status().message());
  EXPECT_THAT(streamed[0].count.status().message(),
              HasSubstr("rank 1 slot 4 (predicted 2, label 0)"));
  ASSERT_EQ(streamed[1].count.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(streamed[1].count.status().message(),
              HasSubstr("rank 0's streamed merge refused the predictions"));
}

TEST(PredictionCountTest, ARowNamingNoReceiptIsRefused) {
  Deal deal = MakeDeal(1, 5, 0);
  deal.rows[0].accessor<int64_t, 2>()[2][0] = 5;
  for (const ByReceiptIdDedup& dedup : {Gathered(), Streamed(2)}) {
    const std::vector<RankOutcome> outcome = CountOnGroup(deal, dedup);
    EXPECT_EQ(outcome[0].count.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(outcome[0].count.status().message(),
                HasSubstr("rank 0 slot 2 names dataset index 5, not one of the 5"));
  }
}

TEST(PredictionCountTest, ValidRowCountsOfAnotherWorldAreRefused) {
  const Deal deal = MakeDeal(1, 5, 0);
  PredictionCountInputs in;
  in.receipt_ids = &deal.receipt_ids;
  in.label_names = kLabels;
  const ByReceiptIdDedup dedup = Gathered();
  in.dedup = &dedup;
  in.world_size = 1;
  in.valid_rows = {5, 0};
  absl::StatusOr<PredictionCount> report = CountPredictionsOnce(deal.rows[0], in);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(report.status().message(), HasSubstr("2 ranks' valid row counts for a world of 1"));
}

}  // namespace
}  // namespace receipt_parity
