#include "metrics/sorted_stream_merge.h"

#include <algorithm>
#include <queue>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "metrics/first_per_receipt.h"

namespace receipt_parity {
namespace {

// Where the merge is in one stream: the chunk it holds and the last
// prediction it took (to check the stream's order).
struct Cursor {
  PredictionStream* stream = nullptr;
  int rank = 0;
  std::vector<Prediction> chunk;
  size_t next = 0;
  bool ended = false;
  bool took_any = false;
  std::string last_id;
  int64_t last_slot = 0;

  const Prediction& head() const { return chunk[next]; }
  bool has_head() const { return next < chunk.size(); }
};

// Reads chunks until the cursor has a head or its stream ends.
absl::Status Refill(Cursor& cursor) {
  while (!cursor.has_head() && !cursor.ended) {
    absl::StatusOr<std::vector<Prediction>> chunk = cursor.stream->NextChunk();
    if (!chunk.ok()) return chunk.status();
    cursor.chunk = *std::move(chunk);
    cursor.next = 0;
    cursor.ended = cursor.chunk.empty();
  }
  return absl::OkStatus();
}

// Takes the cursor's head; InvalidArgument when it is not after the one
// taken before (the stream is out of order).
absl::StatusOr<Prediction> Take(Cursor& cursor) {
  Prediction p = std::move(cursor.chunk[cursor.next++]);
  const bool in_order = !cursor.took_any || std::tie(cursor.last_id, cursor.last_slot) <
                                                std::tie(p.receipt_id, p.slot);
  if (!in_order) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the predictions of rank ", cursor.rank,
        " are not sorted by (receipt id, slot): receipt '", p.receipt_id, "' slot ", p.slot,
        " came after receipt '", cursor.last_id, "' slot ", cursor.last_slot));
  }
  cursor.took_any = true;
  cursor.last_id = p.receipt_id;
  cursor.last_slot = p.slot;
  return p;
}

// The copies of one receipt id as they are merged, and what the merge
// concluded so far.
class CopyGroups {
 public:
  CopyGroups(const std::string& plugin_name,
             absl::FunctionRef<absl::Status(const Prediction&)> counted)
      : plugin_name_(plugin_name), counted_(counted) {}

  // Adds the next prediction in (receipt id, rank, slot) order.
  void Add(Prediction p) {
    if (!copies_.empty() && copies_.front().receipt_id != p.receipt_id) Flush();
    copies_.push_back(std::move(p));
  }

  // Concludes the last id; then the merge's verdict.
  absl::Status Finish() {
    Flush();
    if (!first_error_.ok()) return first_error_;
    if (disagreeing_ > 0) {
      return absl::FailedPreconditionError(
          DisagreeingCopiesMessage(plugin_name_, shown_, disagreeing_));
    }
    return absl::OkStatus();
  }

  void Fail(absl::Status error) {
    if (first_error_.ok()) first_error_ = std::move(error);
  }
  size_t held() const { return copies_.size(); }
  int64_t duplicates_dropped() const { return dropped_; }

 private:
  void Flush() {
    if (copies_.empty()) return;
    dropped_ += static_cast<int64_t>(copies_.size()) - 1;
    const Prediction& first = copies_.front();
    const bool disagree = std::any_of(copies_.begin() + 1, copies_.end(),
                                      [&](const Prediction& p) { return CopiesDisagree(first, p); });
    if (disagree) {
      ++disagreeing_;
      if (shown_.size() < kDisagreementsShown) {
        shown_.push_back(DescribeDisagreement(copies_.begin(), copies_.end()));
      }
    }
    // Once the merge has failed, nothing more is counted; it only drains.
    if (first_error_.ok() && disagreeing_ == 0) Fail(counted_(first));
    copies_.clear();
  }

  const std::string& plugin_name_;
  absl::FunctionRef<absl::Status(const Prediction&)> counted_;
  std::vector<Prediction> copies_;
  int64_t dropped_ = 0;
  size_t disagreeing_ = 0;
  std::vector<std::string> shown_;
  absl::Status first_error_;
};

}  // namespace

void SortForStream(std::vector<Prediction>* predictions) {
  std::sort(predictions->begin(), predictions->end(), [](const Prediction& a, const Prediction& b) {
    return std::tie(a.receipt_id, a.slot) < std::tie(b.receipt_id, b.slot);
  });
}

absl::StatusOr<StreamMergeCounts> MergeSortedPredictionStreams(
    const std::vector<PredictionStream*>& streams, const std::string& plugin_name,
    absl::FunctionRef<absl::Status(const Prediction&)> counted) {
  std::vector<Cursor> cursors(streams.size());
  // The cursor whose head comes first in (receipt id, rank, slot) order on
  // top.
  const auto later = [&cursors](int a, int b) {
    const Prediction& x = cursors[a].head();
    const Prediction& y = cursors[b].head();
    return std::tie(x.receipt_id, a, x.slot) > std::tie(y.receipt_id, b, y.slot);
  };
  std::priority_queue<int, std::vector<int>, decltype(later)> heads(later);
  StreamMergeCounts counts;
  int64_t held_in_chunks = 0;
  for (size_t r = 0; r < streams.size(); ++r) {
    cursors[r].stream = streams[r];
    cursors[r].rank = static_cast<int>(r);
    if (absl::Status s = Refill(cursors[r]); !s.ok()) return s;
    held_in_chunks += static_cast<int64_t>(cursors[r].chunk.size());
    if (cursors[r].has_head()) heads.push(static_cast<int>(r));
  }
  CopyGroups groups(plugin_name, counted);
  while (!heads.empty()) {
    const int r = heads.top();
    heads.pop();
    Cursor& cursor = cursors[r];
    absl::StatusOr<Prediction> p = Take(cursor);
    if (!p.ok()) {
      groups.Fail(p.status());
    } else {
      ++counts.merged;
      groups.Add(*std::move(p));
    }
    counts.peak_held = std::max(counts.peak_held,
                                held_in_chunks + static_cast<int64_t>(groups.held()));
    if (!cursor.has_head()) {
      held_in_chunks -= static_cast<int64_t>(cursor.chunk.size());
      if (absl::Status s = Refill(cursor); !s.ok()) return s;
      held_in_chunks += static_cast<int64_t>(cursor.chunk.size());
    }
    if (cursor.has_head()) heads.push(r);
  }
  if (absl::Status s = groups.Finish(); !s.ok()) return s;
  counts.duplicates_dropped = groups.duplicates_dropped();
  return counts;
}

}  // namespace receipt_parity
