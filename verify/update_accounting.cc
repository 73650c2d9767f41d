#include "verify/update_accounting.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <utility>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "collectives/collective_error.h"
#include "data/random_stream.h"
#include "logging/glog.h"
#include "model/keyed_dropout.h"

namespace receipt_parity {
namespace {

uint64_t Bits(double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

int64_t CountValid(const std::vector<Slot>& slots, size_t begin, size_t end) {
  int64_t valid = 0;
  for (size_t p = begin; p < end; ++p) valid += slots[p].valid;
  return valid;
}

std::string SlotText(const Slot& slot) {
  return absl::StrCat("dataset index ", slot.dataset_index, slot.valid ? "" : " (masked)");
}

// How the run's order departs from one worker's as the policy declares it
// may, one sentence; nullopt-like empty `beyond` when it departs otherwise
// (then `beyond` says how).
struct OrderComparison {
  std::string declared;
  std::string beyond;
};

OrderComparison CompareOrders(const std::vector<Slot>& run, const std::vector<Slot>& one_worker,
                              EpochCoverage coverage, int world_size) {
  OrderComparison out;
  const size_t common = std::min(run.size(), one_worker.size());
  for (size_t p = 0; p < common; ++p) {
    if (!(run[p] == one_worker[p])) {
      out.beyond = absl::StrCat("position ", p, " of the epoch's order holds ", SlotText(run[p]),
                                " on ", world_size, " workers and ", SlotText(one_worker[p]),
                                " on one");
      return out;
    }
  }
  if (run.size() > one_worker.size()) {
    const int64_t extra = static_cast<int64_t>(run.size() - one_worker.size());
    const int64_t repeated = CountValid(run, one_worker.size(), run.size());
    if (repeated == 0) {
      out.declared = absl::StrCat(extra, " masked pad slot(s) end the epoch (they weigh nothing)");
    } else if (coverage == EpochCoverage::kOnceWithRepeatedPadding && repeated < world_size) {
      out.declared = absl::StrCat(repeated, " repeated receipt(s) pad the epoch's end, as the "
                                            "policy declares (once_with_repeated_padding)");
    } else {
      out.beyond = absl::StrCat("the epoch's order on ", world_size, " workers adds ", repeated,
                                " valid slot(s) after one worker's ", one_worker.size(),
                                ", which the policy's coverage (",
                                EpochCoverageName(coverage), ") does not declare");
    }
  } else if (run.size() < one_worker.size()) {
    const int64_t dropped = static_cast<int64_t>(one_worker.size() - run.size());
    if (coverage == EpochCoverage::kOnceOrDropped && dropped < world_size) {
      out.declared = absl::StrCat(dropped, " receipt(s) dropped from the epoch's end, as the "
                                           "policy declares (once_or_dropped)");
    } else {
      out.beyond = absl::StrCat("the epoch's order on ", world_size, " workers leaves out ",
                                dropped, " of one worker's ", one_worker.size(),
                                " slots, which the policy's coverage (",
                                EpochCoverageName(coverage), ") does not declare");
    }
  }
  return out;
}

}  // namespace

uint64_t AccountingRowHash(int64_t total_update, const AccountingRow& row) {
  uint64_t h = MixSeed(0x61636374, static_cast<uint64_t>(total_update));  // "acct"
  h = MixSeed(h, static_cast<uint64_t>(row.position));
  h = MixSeed(h, static_cast<uint64_t>(row.dataset_index));
  h = MixSeed(h, row.valid ? 1 : 0);
  h = MixSeed(h, Bits(row.weight));
  return MixSeed(h, static_cast<uint64_t>(row.key));
}

uint64_t FoldAccounting(int64_t total_update, absl::Span<const AccountingRow> rows) {
  uint64_t sum = 0;
  for (const AccountingRow& row : rows) {
    if (Counts(row)) sum += AccountingRowHash(total_update, row);
  }
  return sum;
}

OneWorkerAccounting::OneWorkerAccounting(OneWorkerInputs inputs) : inputs_(inputs) {
  CHECK(inputs_.policy != nullptr && inputs_.weighting != nullptr && inputs_.labels != nullptr &&
        inputs_.class_counts != nullptr && inputs_.examples != nullptr)
      << "OneWorkerAccounting: every input is required";
}

absl::Status OneWorkerAccounting::BeginEpoch(const EpochPlan& run_plan) {
  global_batch_ = run_plan.global_batch();
  OrderRequest request;
  request.num_examples = inputs_.num_examples;
  request.world_size = 1;
  request.seed = inputs_.seed;
  request.epoch = run_plan.epoch();
  request.global_batch = global_batch_;
  absl::StatusOr<GlobalOrder> one_worker = inputs_.policy->Order(request);
  if (!one_worker.ok()) {
    return absl::Status(one_worker.status().code(),
                        absl::StrCat("the one-worker order of epoch ", run_plan.epoch(), ": ",
                                     one_worker.status().message()));
  }
  const OrderComparison compared =
      CompareOrders(run_plan.global_order().slots, one_worker->slots,
                    inputs_.policy->epoch_coverage(), run_plan.world_size());
  if (compared.beyond.empty()) {
    one_worker_ = GlobalOrder();
    order_ = &run_plan.global_order();
    order_note_ = compared.declared;
  } else {
    one_worker_ = *std::move(one_worker);
    order_ = &one_worker_;
    order_note_ = absl::StrCat("epoch ", run_plan.epoch(), ": ", compared.beyond,
                               "; every update that trains otherwise than one worker fails its "
                               "accounting");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<AccountingRow>> OneWorkerAccounting::Rows(int64_t update,
                                                                     int64_t total_update) const {
  CHECK(order_ != nullptr) << "OneWorkerAccounting: Rows before BeginEpoch";
  const std::vector<Slot>& order = order_->slots;
  const auto size = static_cast<int64_t>(order.size());
  const int64_t begin = std::min(size, update * global_batch_);
  const int64_t end = std::min(size, begin + global_batch_);
  const absl::Span<const Slot> slots(order.data() + begin, static_cast<size_t>(end - begin));
  UpdateComposition composition;
  composition.by_rank.resize(1);
  composition.class_counts = *inputs_.class_counts;
  for (const Slot& slot : slots) {
    composition.by_rank[0].push_back(
        {(*inputs_.labels)[static_cast<size_t>(slot.dataset_index)], slot.valid, 0});
  }
  const std::vector<double> weights = inputs_.weighting->Weights(composition, 0);
  absl::StatusOr<std::vector<int64_t>> keys = inputs_.examples->SelectKeys(slots);
  if (!keys.ok()) return keys.status();
  // A source without keys gives its forward passes none: their rows' keys
  // are 0.
  std::vector<int64_t> update_keys(slots.size(), 0);
  try {
    if (!keys->empty()) {
      update_keys = KeysOf(UpdateKeys(at::tensor(*keys, at::kLong), total_update),
                           static_cast<int64_t>(slots.size()));
    }
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "one worker's update keys: LibTorch");
  }
  std::vector<AccountingRow> rows(slots.size());
  for (size_t p = 0; p < slots.size(); ++p) {
    rows[p].position = static_cast<int64_t>(p);
    rows[p].dataset_index = slots[p].dataset_index;
    rows[p].valid = slots[p].valid;
    rows[p].weight = weights[p];
    rows[p].key = update_keys[p];
  }
  return rows;
}

}  // namespace receipt_parity
