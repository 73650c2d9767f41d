// Counting each receipt id once by a sorted streaming merge: every rank's
// predictions arrive as a stream sorted by (receipt id, slot), a chunk at
// a time, and the merge keeps the first copy of each id in (receipt id,
// rank, slot) order, the rule of `by_receipt_id` (metrics/
// by_receipt_id_dedup.h), holding at most one chunk per stream and the
// copies of one id: memory O(streams x chunk), whatever the number of
// predictions.
//
//   std::vector<PredictionStream*> streams = {&rank0, &rank1};
//   absl::StatusOr<StreamMergeCounts> counts = MergeSortedPredictionStreams(
//       streams, "by_receipt_id", [&](const Prediction& p) { return builder.Add(p); });
//
// The counted predictions, their order and the refusal's message are those
// ByReceiptIdDedup::Dedup gives for the same predictions gathered.
//
// Thread safety: one call per set of streams.
#ifndef RECEIPT_PARITY_METRICS_SORTED_STREAM_MERGE_H_
#define RECEIPT_PARITY_METRICS_SORTED_STREAM_MERGE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "metrics/metric_dedup.h"

namespace receipt_parity {

// One rank's predictions in (receipt id, slot) order, a chunk at a time.
class PredictionStream {
 public:
  virtual ~PredictionStream() = default;
  // The next chunk (each prediction's `rank` is the stream's); empty when
  // the stream has ended. An error ends the merge with it.
  virtual absl::StatusOr<std::vector<Prediction>> NextChunk() = 0;
};

// Sorts one rank's predictions into the order a PredictionStream yields.
void SortForStream(std::vector<Prediction>* predictions);

struct StreamMergeCounts {
  // Predictions read from every stream.
  int64_t merged = 0;
  // Copies left out (merged - counted).
  int64_t duplicates_dropped = 0;
  // The most predictions the merge held at once (chunks and one id's
  // copies): what its memory is proportional to.
  int64_t peak_held = 0;
};

// Merges `streams` (index = rank, nullptr not allowed), calling `counted`
// once per receipt id, in receipt id order, with its first copy; an error
// from `counted` or a stream ends the merge with it.
// FailedPrecondition when copies of an id disagree on the predicted class
// or label, with ByReceiptIdDedup's message (prefixed `plugin_name`);
// InvalidArgument when a stream is out of (receipt id, slot) order, naming
// the rank and both predictions. Those and an error from `counted` come
// after every stream has been read to its end (so that every sender
// finishes); a stream's own error returns at once.
absl::StatusOr<StreamMergeCounts> MergeSortedPredictionStreams(
    const std::vector<PredictionStream*>& streams, const std::string& plugin_name,
    absl::FunctionRef<absl::Status(const Prediction&)> counted);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_METRICS_SORTED_STREAM_MERGE_H_
