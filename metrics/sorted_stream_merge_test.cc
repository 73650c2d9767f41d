#include "metrics/sorted_stream_merge.h"

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/by_receipt_id_dedup.h"

namespace receipt_parity {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// One rank's sorted predictions handed out `chunk` at a time; counts the
// chunks asked for.
class VectorStream : public PredictionStream {
 public:
  VectorStream(std::vector<Prediction> rows, size_t chunk, bool sort = true)
      : rows_(std::move(rows)), chunk_(chunk) {
    if (sort) SortForStream(&rows_);
  }
  absl::StatusOr<std::vector<Prediction>> NextChunk() override {
    ++calls_;
    const size_t end = std::min(rows_.size(), next_ + chunk_);
    std::vector<Prediction> out(rows_.begin() + next_, rows_.begin() + end);
    next_ = end;
    return out;
  }
  bool drained() const { return next_ == rows_.size(); }
  int calls() const { return calls_; }

 private:
  std::vector<Prediction> rows_;
  size_t chunk_;
  size_t next_ = 0;
  int calls_ = 0;
};

// `ranks` ranks predicting `ids` receipts dealt round robin, the first
// `pads` of them dealt a second time to other ranks (duplicate_pad style),
// each copy agreeing.
std::vector<std::vector<Prediction>> Dealt(int ranks, int ids, int pads, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<Prediction>> per_rank(ranks);
  std::vector<int> order(ids);
  for (int i = 0; i < ids; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  const auto deal = [&](int position, int id) {
    const int rank = position % ranks;
    Prediction p;
    p.receipt_id = absl::StrCat("r", id * 7919 % 100003);
    p.predicted = id % 3;
    p.label = (id / 3) % 3;
    p.rank = rank;
    p.slot = static_cast<int64_t>(per_rank[rank].size());
    per_rank[rank].push_back(p);
  };
  for (int i = 0; i < ids; ++i) deal(i, order[i]);
  for (int i = 0; i < pads; ++i) deal(ids + i, order[i]);
  return per_rank;
}

std::vector<Prediction> Flatten(const std::vector<std::vector<Prediction>>& per_rank) {
  std::vector<Prediction> all;
  for (const auto& rows : per_rank) all.insert(all.end(), rows.begin(), rows.end());
  return all;
}

struct Merged {
  absl::StatusOr<StreamMergeCounts> counts;
  std::vector<Prediction> counted;
  std::vector<std::unique_ptr<VectorStream>> streams;
};

Merged Merge(const std::vector<std::vector<Prediction>>& per_rank, size_t chunk,
             bool sort = true) {
  Merged out;
  std::vector<PredictionStream*> streams;
  for (const auto& rows : per_rank) {
    out.streams.push_back(std::make_unique<VectorStream>(rows, chunk, sort));
    streams.push_back(out.streams.back().get());
  }
  out.counts = MergeSortedPredictionStreams(streams, "by_receipt_id", [&](const Prediction& p) {
    out.counted.push_back(p);
    return absl::OkStatus();
  });
  return out;
}

std::string Describe(const std::vector<Prediction>& predictions) {
  std::string out;
  for (const Prediction& p : predictions) {
    absl::StrAppend(&out, p.receipt_id, "@", p.rank, ":", p.slot, "=", p.predicted, "/", p.label,
                    " ");
  }
  return out;
}

TEST(SortedStreamMergeTest, CountsWhatTheGatheredDedupCounts) {
  for (int ranks : {1, 2, 3, 8}) {
    for (size_t chunk : {1, 2, 7, 4096}) {
      const auto per_rank = Dealt(ranks, 211, ranks * 5, 17u + ranks);
      absl::StatusOr<DedupResult> gathered = ByReceiptIdDedup().Dedup(Flatten(per_rank));
      ASSERT_TRUE(gathered.ok()) << gathered.status();
      Merged merged = Merge(per_rank, chunk);
      ASSERT_TRUE(merged.counts.ok()) << merged.counts.status();
      SCOPED_TRACE(absl::StrCat(ranks, " ranks, chunk ", chunk));
      EXPECT_EQ(Describe(merged.counted), Describe(gathered->counted));
      EXPECT_EQ(merged.counts->duplicates_dropped, gathered->duplicates_dropped);
      EXPECT_EQ(merged.counts->duplicates_dropped, ranks * 5);
      EXPECT_EQ(merged.counts->merged, 211 + ranks * 5);
      // At most a chunk per rank and one id's copies (two here).
      EXPECT_LE(merged.counts->peak_held, static_cast<int64_t>(ranks * chunk + 2));
    }
  }
}

TEST(SortedStreamMergeTest, EveryCopyOfAnIdOnEveryRankIsDropped) {
  // "x" predicted by all three ranks, twice on rank 1.
  const std::vector<std::vector<Prediction>> per_rank = {
      {{"x", 1, 1, 0, 4}, {"y", 0, 0, 0, 0}},
      {{"x", 1, 1, 1, 0}, {"x", 1, 1, 1, 2}},
      {{"x", 1, 1, 2, 1}},
  };
  Merged merged = Merge(per_rank, 1);
  ASSERT_TRUE(merged.counts.ok()) << merged.counts.status();
  EXPECT_EQ(Describe(merged.counted), "x@0:4=1/1 y@0:0=0/0 ");
  EXPECT_EQ(merged.counts->duplicates_dropped, 3);
}

TEST(SortedStreamMergeTest, DisagreeingCopiesGetTheGatheredMessage) {
  auto per_rank = Dealt(3, 60, 15, 5u);
  // The pads (slots 20 on, 5 per rank) of 12 ids disagree: more ids than
  // the message shows.
  int changed = 0;
  for (auto& rows : per_rank) {
    for (Prediction& p : rows) {
      if (p.slot >= 20 && changed < 12) {
        p.predicted += 1;
        ++changed;
      }
    }
  }
  ASSERT_EQ(changed, 12);
  absl::StatusOr<DedupResult> gathered = ByReceiptIdDedup().Dedup(Flatten(per_rank));
  ASSERT_EQ(gathered.status().code(), absl::StatusCode::kFailedPrecondition);
  Merged merged = Merge(per_rank, 4);
  ASSERT_EQ(merged.counts.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(merged.counts.status().message(), gathered.status().message());
  EXPECT_THAT(merged.counts.status().message(), HasSubstr("... and 2 more"));
  for (const auto& stream : merged.streams) EXPECT_TRUE(stream->drained());
}

TEST(SortedStreamMergeTest, AStreamOutOfOrderIsRefusedAfterDraining) {
  std::vector<std::vector<Prediction>> per_rank = {
      {{"a", 0, 0, 0, 0}, {"c", 0, 0, 0, 1}, {"b", 0, 0, 0, 2}},
      {{"a", 0, 0, 1, 0}, {"d", 1, 1, 1, 1}},
  };
  Merged merged = Merge(per_rank, 2, /*sort=*/false);
  ASSERT_EQ(merged.counts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(merged.counts.status().message(),
              AllOf(HasSubstr("rank 0"), HasSubstr("receipt 'b' slot 2"),
                    HasSubstr("after receipt 'c' slot 1")));
  for (const auto& stream : merged.streams) EXPECT_TRUE(stream->drained());
}

TEST(SortedStreamMergeTest, ACountingErrorEndsTheMergeAfterDraining) {
  const auto per_rank = Dealt(2, 30, 0, 9u);
  std::vector<std::unique_ptr<VectorStream>> owned;
  std::vector<PredictionStream*> streams;
  for (const auto& rows : per_rank) {
    owned.push_back(std::make_unique<VectorStream>(rows, 3));
    streams.push_back(owned.back().get());
  }
  int calls = 0;
  absl::StatusOr<StreamMergeCounts> counts =
      MergeSortedPredictionStreams(streams, "by_receipt_id", [&](const Prediction&) {
        return ++calls == 5 ? absl::InvalidArgumentError("fifth refused") : absl::OkStatus();
      });
  EXPECT_EQ(counts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(counts.status().message(), "fifth refused");
  EXPECT_EQ(calls, 5);
  for (const auto& stream : owned) EXPECT_TRUE(stream->drained());
}

class FailingStream : public PredictionStream {
 public:
  absl::StatusOr<std::vector<Prediction>> NextChunk() override {
    return absl::UnavailableError("rank 1 is gone");
  }
};

TEST(SortedStreamMergeTest, AStreamErrorEndsTheMergeAtOnce) {
  VectorStream fine({{"a", 0, 0, 0, 0}}, 1);
  FailingStream failing;
  absl::StatusOr<StreamMergeCounts> counts = MergeSortedPredictionStreams(
      {&fine, &failing}, "by_receipt_id", [](const Prediction&) { return absl::OkStatus(); });
  EXPECT_EQ(counts.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(counts.status().message(), HasSubstr("rank 1 is gone"));
}

TEST(SortedStreamMergeTest, NoPredictionsCountNothing) {
  Merged merged = Merge({{}, {}}, 8);
  ASSERT_TRUE(merged.counts.ok()) << merged.counts.status();
  EXPECT_TRUE(merged.counted.empty());
  EXPECT_EQ(merged.counts->merged, 0);
  EXPECT_EQ(merged.counts->duplicates_dropped, 0);
}

}  // namespace
}  // namespace receipt_parity
