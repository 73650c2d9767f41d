// The accounting of an update (layer 0 of the every-update checks,
// docs/parity.md): what each rank trained, one row per slot, against what
// one worker trains at the same update.
//
// A row is (position in the update's block of the epoch's global order,
// dataset index, valid, weight, update key): the weight is the loss
// weighting's double divided by the reducer's declared divisor (1 for a
// sum, the world size for rank_average: what the example finally weighs
// in the reduced gradient), and the key is the one the forward passes drew
// keyed dropout from (model/keyed_dropout.h UpdateKeys). A row counts when
// its slot is valid or it weighs anything (a masked pad weighs zero and
// is left out). The micro-batch a row went into is recorded for the
// failure message, not compared: the update's gradient is the sum of its
// micro-batches, and what micro-batching can get wrong shows in the
// weights.
//
// An update's accounting is the sum, modulo 2^64, of its counting rows'
// 64-bit hashes (the position makes each row's place part of its hash, so
// the sum is a fold in the block's order, whichever rank holds which
// row): the ranks' partial sums add up to one worker's sum exactly when
// they trained the same receipts, views, weights and keys at the same
// positions (up to a 2^-64 collision).
//
// One worker's accounting depends on the config and the data, not on the
// model: OneWorkerAccounting computes it as the run goes, from the sampler
// policy's one-worker order of each epoch and the loss weighting on one
// rank in one micro-batch, and the example source's keys.
//
// Thread safety: OneWorkerAccounting is not thread-safe; the free
// functions are pure.
#ifndef RECEIPT_PARITY_VERIFY_UPDATE_ACCOUNTING_H_
#define RECEIPT_PARITY_VERIFY_UPDATE_ACCOUNTING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "data/example_source.h"
#include "samplers/epoch_plan.h"
#include "samplers/sampler_policy.h"
#include "weighting/loss_weighting.h"

namespace receipt_parity {

struct AccountingRow {
  int64_t position = 0;
  int64_t dataset_index = 0;
  bool valid = true;
  double weight = 0;
  int64_t key = 0;
  int micro_batch = 0;
};

// Whether a row enters the accounting.
inline bool Counts(const AccountingRow& row) { return row.valid || row.weight != 0; }

// The row's hash at global update `total_update` (its micro-batch left
// out; the weight by its bits).
uint64_t AccountingRowHash(int64_t total_update, const AccountingRow& row);

// The sum of the counting rows' hashes, modulo 2^64.
uint64_t FoldAccounting(int64_t total_update, absl::Span<const AccountingRow> rows);

// What one worker needs to know to train the run's updates. Not owned.
struct OneWorkerInputs {
  const SamplerPolicy* policy = nullptr;
  int64_t num_examples = 0;
  uint64_t seed = 0;
  const LossWeighting* weighting = nullptr;
  // By dataset index.
  const std::vector<int>* labels = nullptr;
  const std::vector<int64_t>* class_counts = nullptr;
  const ExampleSource* examples = nullptr;
};

class OneWorkerAccounting {
 public:
  // REQUIRES: every pointer of `inputs` set.
  explicit OneWorkerAccounting(OneWorkerInputs inputs);

  // At the start of every epoch the run trains: the policy's order of the
  // epoch on one worker against `run_plan`'s. When the run's order is one
  // worker's, or departs from it only as the policy declares
  // (SamplerPolicy::epoch_coverage: masked pads; fewer than world_size
  // repeated receipts at the epoch's end; fewer than world_size receipts
  // dropped from its end), one worker's rows are read from the run's order
  // (the declared deviation accepted; order_note() says what it was);
  // otherwise from one worker's own order, so that every update the run's
  // order trains otherwise fails its accounting. `run_plan` must outlive
  // the epoch's Rows() calls. Errors: the policy's.
  absl::Status BeginEpoch(const EpochPlan& run_plan);

  // One worker's rows of update `update` of the epoch (the run's global
  // update `total_update`), one per position of its block (counting or
  // not). Errors: the example source's (its keys).
  absl::StatusOr<std::vector<AccountingRow>> Rows(int64_t update, int64_t total_update) const;

  // The epoch's order against one worker's, one sentence; empty when equal.
  const std::string& order_note() const { return order_note_; }

 private:
  OneWorkerInputs inputs_;
  int64_t global_batch_ = 0;
  const GlobalOrder* order_ = nullptr;  // the run plan's, or one_worker_
  GlobalOrder one_worker_;
  std::string order_note_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_VERIFY_UPDATE_ACCOUNTING_H_
