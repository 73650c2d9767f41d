#include "artifacts/world_size_change.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "logging/glog.h"
#include "io/json_file.h"

namespace receipt_parity {
namespace {

struct Remaining {
  std::vector<RankIds> ranks;
  std::map<int64_t, int> valid_count;  // dataset index -> valid slots
  int masked = 0;
};

absl::StatusOr<EpochPlan> Plan(const WorldSizeChange& c, const std::vector<int>& local) {
  OrderRequest request;
  request.num_examples = static_cast<int64_t>(c.receipt_ids.size());
  request.world_size = static_cast<int>(local.size());
  request.seed = c.seed;
  request.epoch = c.epoch;
  return BuildEpochPlan(*c.policy, request, local);
}

Remaining Collect(const EpochPlan& plan, const std::vector<std::string>& ids,
                  int64_t from_update) {
  Remaining out;
  for (int r = 0; r < plan.world_size(); ++r) {
    RankIds rank;
    rank.set_rank(r);
    for (int64_t u = from_update; u < plan.num_updates(); ++u) {
      for (const Slot& slot : plan.UpdateSlots(r, u)) {
        rank.add_receipt_ids(ids[slot.dataset_index]);
        rank.add_valid(slot.valid);
        if (slot.valid) {
          ++out.valid_count[slot.dataset_index];
        } else {
          ++out.masked;
        }
      }
    }
    out.ranks.push_back(std::move(rank));
  }
  return out;
}

// Update u's valid receipts (sorted dataset indices) and masked slots,
// over all ranks.
std::pair<std::vector<int64_t>, int> UpdateContents(const EpochPlan& plan, int64_t u) {
  std::vector<int64_t> valid;
  int masked = 0;
  for (int r = 0; r < plan.world_size(); ++r) {
    for (const Slot& slot : plan.UpdateSlots(r, u)) {
      if (slot.valid) {
        valid.push_back(slot.dataset_index);
      } else {
        ++masked;
      }
    }
  }
  std::sort(valid.begin(), valid.end());
  return {std::move(valid), masked};
}

// The updates from `from_update` on whose receipts (or masked slots)
// differ between the plans; an update only one plan has counts as changed.
int ChangedUpdates(const EpochPlan& old_plan, const EpochPlan& new_plan, int64_t from_update) {
  const int64_t common = std::min(old_plan.num_updates(), new_plan.num_updates());
  int changed = static_cast<int>(std::max(old_plan.num_updates(), new_plan.num_updates()) -
                                 std::max(common, from_update));
  for (int64_t u = from_update; u < common; ++u) {
    if (UpdateContents(old_plan, u) != UpdateContents(new_plan, u)) ++changed;
  }
  return changed;
}

}  // namespace

absl::StatusOr<WorldSizeChangeReport> CompareDataOrder(const WorldSizeChange& c) {
  const int old_batch = std::accumulate(c.old_local_batch.begin(), c.old_local_batch.end(), 0);
  const int new_batch = std::accumulate(c.new_local_batch.begin(), c.new_local_batch.end(), 0);
  if (old_batch != new_batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "world-size change: the global batch changed from ", old_batch, " to ", new_batch,
        "; the checkpoint's cursor would not mean the same position"));
  }
  absl::StatusOr<EpochPlan> old_plan = Plan(c, c.old_local_batch);
  if (!old_plan.ok()) return old_plan.status();
  absl::StatusOr<EpochPlan> new_plan = Plan(c, c.new_local_batch);
  if (!new_plan.ok()) return new_plan.status();

  // Trained before the checkpoint: the old plan's first updates.
  std::map<int64_t, int> before;
  for (int64_t u = 0; u < std::min(c.updates_done, old_plan->num_updates()); ++u) {
    for (int r = 0; r < old_plan->world_size(); ++r) {
      for (const Slot& slot : old_plan->UpdateSlots(r, u)) {
        if (slot.valid) ++before[slot.dataset_index];
      }
    }
  }
  const Remaining old_rest = Collect(*old_plan, c.receipt_ids, c.updates_done);
  const Remaining new_rest = Collect(*new_plan, c.receipt_ids, c.updates_done);

  WorldSizeChangeReport report;
  report.set_epoch(static_cast<int32_t>(c.epoch));
  report.set_resumed_update_in_epoch(static_cast<int32_t>(c.updates_done));
  report.set_old_world_size(static_cast<int32_t>(c.old_local_batch.size()));
  report.set_new_world_size(static_cast<int32_t>(c.new_local_batch.size()));
  report.set_policy(c.policy_name);
  report.set_num_ids(static_cast<int32_t>(c.receipt_ids.size()));
  int seen = 0;
  for (const auto& [index, count] : before) seen += count;
  report.set_seen_before(seen);
  for (const RankIds& r : old_rest.ranks) *report.add_old_remaining() = r;
  for (const RankIds& r : new_rest.ranks) *report.add_new_remaining() = r;
  for (int64_t index = 0; index < static_cast<int64_t>(c.receipt_ids.size()); ++index) {
    const int times = (before.count(index) ? before.at(index) : 0) +
                      (new_rest.valid_count.count(index) ? new_rest.valid_count.at(index) : 0);
    if (times == 0) report.add_skipped_ids(c.receipt_ids[index]);
    if (times > 1) report.add_repeated_ids(c.receipt_ids[index]);
  }
  auto duplicates = [&](const Remaining& rest) {
    int extra = 0;
    for (const auto& [index, count] : rest.valid_count) {
      extra += count - 1 + (before.count(index) ? before.at(index) : 0) * (count > 0);
    }
    return extra;
  };
  report.set_old_masked_slots(old_rest.masked);
  report.set_new_masked_slots(new_rest.masked);
  report.set_old_duplicate_slots(duplicates(old_rest));
  report.set_new_duplicate_slots(duplicates(new_rest));
  report.set_changed_updates(ChangedUpdates(*old_plan, *new_plan, c.updates_done));
  report.set_remaining_updates(static_cast<int32_t>(
      std::max<int64_t>(0, old_plan->num_updates() - c.updates_done)));
  report.set_same_updates(report.changed_updates() == 0);
  report.set_summary(absl::StrCat(
      "epoch ", c.epoch, " resumed after ", c.updates_done, " updates: ",
      report.old_world_size(), " -> ", report.new_world_size(), " ranks (", c.policy_name,
      "); rest of the epoch: ", report.new_masked_slots(), " masked slot(s) (was ",
      report.old_masked_slots(), "), ", report.new_duplicate_slots(),
      " duplicate slot(s) (was ", report.old_duplicate_slots(), "), ",
      report.skipped_ids_size(), " id(s) skipped, ", report.repeated_ids_size(),
      " id(s) trained twice",
      report.same_updates()
          ? "; every update trains the receipts it would have"
          : absl::StrCat("; ", report.changed_updates(), " of the ", report.remaining_updates(),
                         " remaining update(s) train other receipts")));
  return report;
}

absl::Status WriteWorldSizeChangeReport(const WorldSizeChange& change,
                                        const std::string& path) {
  absl::StatusOr<WorldSizeChangeReport> report = CompareDataOrder(change);
  if (!report.ok()) return report.status();
  LOG(WARNING) << "world size changed: " << report->summary();
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  return WriteArtifact(path, change.stamp, *report);
}

}  // namespace receipt_parity
