#include "conformance/loss_weighting_conformance.h"

#include <cmath>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "plugins/plugin_selection.h"
#include "weighting/loss_weighting.h"

namespace receipt_parity {
namespace {

constexpr int kUpdates = 60;
constexpr double kRelativeTolerance = 1e-12;

struct GlobalSlot {
  int label = 0;
  bool valid = true;
};

struct Split {
  int ranks = 1;
  int micro_batches = 1;
};

const std::vector<Split>& Splits() {
  static const std::vector<Split> splits = {{2, 1}, {3, 1}, {4, 1}, {1, 2}, {2, 2}, {3, 3}};
  return splits;
}

std::vector<GlobalSlot> RandomUpdate(int index) {
  std::mt19937 random(1000 + index);
  const int slots = 1 + index % 23;
  std::vector<GlobalSlot> update(slots);
  const int masked_tail = index % 4 == 0 ? static_cast<int>(random() % (slots + 1)) : 0;
  for (int i = 0; i < slots; ++i) {
    update[i].label = static_cast<int>(random() % 4);
    update[i].valid = index % 10 != 5 && i < slots - masked_tail;
  }
  return update;
}

// Where global slot i goes: rank i % ranks (the stride), then its rank's
// slots cut into contiguous micro-batches.
struct Placement {
  int rank = 0;
  int index = 0;
};

UpdateComposition Compose(const std::vector<GlobalSlot>& update, const Split& split,
                          std::vector<Placement>* placements) {
  UpdateComposition composition;
  composition.by_rank.resize(split.ranks);
  composition.class_counts = {40, 25, 10, 5};
  composition.micro_batches = split.micro_batches;
  placements->clear();
  for (size_t i = 0; i < update.size(); ++i) {
    const int rank = static_cast<int>(i % split.ranks);
    placements->push_back({rank, static_cast<int>(composition.by_rank[rank].size())});
    composition.by_rank[rank].push_back({update[i].label, update[i].valid, 0});
  }
  for (auto& slots : composition.by_rank) {
    const int n = static_cast<int>(slots.size());
    for (int j = 0; j < n; ++j) slots[j].micro_batch = j * split.micro_batches / std::max(n, 1);
  }
  return composition;
}

std::string Where(int index, const std::vector<GlobalSlot>& update, const Split& split) {
  int valid = 0;
  for (const GlobalSlot& s : update) valid += s.valid ? 1 : 0;
  return absl::StrCat("update ", index, " (", update.size(), " slots, ", valid, " valid), ",
                      split.ranks, " ranks x ", split.micro_batches, " micro-batches");
}

// Each global slot's weight under `split`; malformed weights go to `shape`.
std::vector<double> WeightsBySlot(const LossWeighting& weighting,
                                  const std::vector<GlobalSlot>& update, const Split& split,
                                  const std::string& where, std::vector<std::string>* shape) {
  std::vector<Placement> placements;
  const UpdateComposition composition = Compose(update, split, &placements);
  std::vector<std::vector<double>> by_rank;
  for (int rank = 0; rank < split.ranks; ++rank) {
    std::vector<double> weights = weighting.Weights(composition, rank);
    const auto& slots = composition.by_rank[rank];
    if (weights.size() != slots.size()) {
      shape->push_back(absl::StrCat(where, ": rank ", rank, " gets ", weights.size(),
                                    " weights for ", slots.size(), " slots"));
      weights.resize(slots.size(), 0);
    }
    bool any_valid = false;
    for (size_t j = 0; j < slots.size(); ++j) {
      any_valid = any_valid || slots[j].valid;
      if (!std::isfinite(weights[j]) || weights[j] < 0) {
        shape->push_back(absl::StrCat(where, ": rank ", rank, " slot ", j, " weighs ",
                                      weights[j], " (not finite and >= 0)"));
      } else if (!slots[j].valid && weights[j] != 0) {
        shape->push_back(absl::StrCat(where, ": rank ", rank, " masked slot ", j, " weighs ",
                                      weights[j], ", not 0"));
      }
    }
    if (!any_valid) {
      for (size_t j = 0; j < weights.size(); ++j) {
        if (weights[j] != 0) {
          shape->push_back(absl::StrCat(where, ": rank ", rank,
                                        " has no valid slot but slot ", j, " weighs ", weights[j]));
        }
      }
    }
    by_rank.push_back(std::move(weights));
  }
  std::vector<double> by_slot;
  for (const Placement& p : placements) by_slot.push_back(by_rank[p.rank][p.index]);
  return by_slot;
}

}  // namespace

absl::StatusOr<SuiteReport> RunLossWeightingSuite(const PluginSelection& selection) {
  absl::StatusOr<std::unique_ptr<LossWeighting>> weighting =
      CreateSelectedPlugin<LossWeighting>(selection, "loss_weighting");
  if (!weighting.ok()) return weighting.status();
  std::vector<std::string> shape, one_worker, determinism;
  for (int index = 0; index < kUpdates; ++index) {
    const std::vector<GlobalSlot> update = RandomUpdate(index);
    const Split one{1, 1};
    const std::vector<double> reference =
        WeightsBySlot(**weighting, update, one, Where(index, update, one), &shape);
    std::vector<std::string> reported_once;
    if (WeightsBySlot(**weighting, update, one, "", &reported_once) != reference) {
      determinism.push_back(absl::StrCat("update ", index, ": a second call gives other weights"));
    }
    for (const Split& split : Splits()) {
      const std::string where = Where(index, update, split);
      const std::vector<double> weights = WeightsBySlot(**weighting, update, split, where, &shape);
      for (size_t i = 0; i < weights.size(); ++i) {
        const double bound = kRelativeTolerance * std::max(std::abs(reference[i]), 1e-300);
        if (std::abs(weights[i] - reference[i]) > bound) {
          one_worker.push_back(absl::StrCat(
              where, ": slot ", i, " (rank ", i % split.ranks, ") weighs ", weights[i],
              "; one worker holding the whole update weighs it ", reference[i]));
          break;
        }
      }
    }
  }
  SuiteReport report;
  report.Add("one finite weight >= 0 per slot, 0 for masked slots and slot-less ranks", shape);
  report.Add("the one-worker weights under every split over ranks and micro-batches (the "
             "effective-batch rule)",
             one_worker);
  std::vector<std::string> declared;
  if (!(*weighting)->split_independent()) {
    declared.push_back(
        "split_independent() is false: the plugin says its weights depend on how an update "
        "is split over ranks and micro-batches, so a multi-worker run does not train the "
        "one-worker model");
  }
  report.Add("declares split_independent()", declared);
  report.Add("the same weights on every call", determinism);
  return report;
}

}  // namespace receipt_parity
