#include "samplers/audit.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "io/checksum.h"
#include "io/atomic_file.h"
#include "samplers/audit_slots_file.h"
#include "samplers/micro_batches.h"

namespace receipt_parity {
namespace {

// Items shown in a summary line before "and N more".
constexpr int kSummaryItems = 5;

std::string Hex(uint64_t value) { return absl::StrCat(absl::Hex(value)); }

RankAudit AuditRank(const EpochPlan& plan, int rank,
                    const std::vector<std::string>& receipt_ids, int micro_batches) {
  RankAudit out;
  out.set_rank(rank);
  std::set<std::string> seen;
  for (const Slot& slot : plan.rank_slots(rank)) {
    out.add_indices(static_cast<int32_t>(slot.dataset_index));
    out.add_receipt_ids(receipt_ids[slot.dataset_index]);
    out.add_valid(slot.valid);
    if (slot.valid) seen.insert(receipt_ids[slot.dataset_index]);
  }
  if (micro_batches > 1) {
    for (int64_t u = 0; u < plan.num_updates(); ++u) {
      const int64_t slots = static_cast<int64_t>(plan.UpdateSlots(rank, u).size());
      for (int64_t i = 0; i < slots; ++i) {
        out.add_micro_batch(MicroBatchOf(i, plan.local_batch()[rank], micro_batches));
      }
    }
  }
  out.set_num_slots(out.indices_size());
  out.set_valid_slots(static_cast<int32_t>(
      std::count(out.valid().begin(), out.valid().end(), true)));
  out.set_unique_ids(static_cast<int32_t>(seen.size()));
  return out;
}

UpdateAudit AuditUpdate(const EpochPlan& plan, int64_t update,
                        const std::vector<std::string>& receipt_ids) {
  UpdateAudit out;
  out.set_update(static_cast<int32_t>(update));
  std::vector<std::string> ids;
  for (int r = 0; r < plan.world_size(); ++r) {
    for (const Slot& slot : plan.UpdateSlots(r, update)) {
      if (slot.valid) {
        ids.push_back(receipt_ids[slot.dataset_index]);
      } else {
        out.set_masked_slots(out.masked_slots() + 1);
      }
    }
  }
  std::sort(ids.begin(), ids.end());
  for (std::string& id : ids) out.add_receipt_ids(std::move(id));
  return out;
}

// Fills everything of `epoch` that follows from the ranks' slot lists.
void AuditSlots(const EpochPlan& plan,
                const std::vector<std::string>& receipt_ids, int micro_batches,
                EpochAudit* epoch) {
  std::map<int32_t, std::vector<SlotRef>> valid_slots_by_index;
  std::set<std::string> seen;
  for (int r = 0; r < plan.world_size(); ++r) {
    RankAudit* rank = epoch->add_ranks();
    *rank = AuditRank(plan, r, receipt_ids, micro_batches);
    for (int s = 0; s < rank->num_slots(); ++s) {
      SlotRef ref;
      ref.set_rank(r);
      ref.set_slot(s);
      if (!rank->valid(s)) {
        *epoch->add_masked_slots() = ref;
        continue;
      }
      valid_slots_by_index[rank->indices(s)].push_back(ref);
      seen.insert(rank->receipt_ids(s));
    }
    epoch->set_num_slots(epoch->num_slots() + rank->num_slots());
    epoch->set_valid_slots(epoch->valid_slots() + rank->valid_slots());
  }
  for (const auto& [index, slots] : valid_slots_by_index) {
    if (slots.size() < 2) continue;
    DuplicatedId* duplicate = epoch->add_duplicated_ids();
    duplicate->set_dataset_index(index);
    duplicate->set_receipt_id(receipt_ids[index]);
    duplicate->set_count(static_cast<int32_t>(slots.size()));
    for (const SlotRef& ref : slots) *duplicate->add_slots() = ref;
  }
  epoch->set_unique_ids(static_cast<int32_t>(seen.size()));
  std::set<std::string> listed;
  for (const std::string& id : receipt_ids) {
    if (seen.count(id) == 0 && listed.insert(id).second) {
      epoch->add_never_seen(id);
    }
  }
  for (int64_t index : plan.dropped()) {
    epoch->add_dropped_indices(static_cast<int32_t>(index));
    epoch->add_dropped_ids(receipt_ids[index]);
  }
  epoch->set_num_updates(static_cast<int32_t>(plan.num_updates()));
  for (int64_t u = 0; u < plan.num_updates(); ++u) {
    epoch->add_global_accepted_per_update(
        static_cast<int32_t>(plan.GlobalAcceptedCount(u)));
    *epoch->add_updates() = AuditUpdate(plan, u, receipt_ids);
  }
}

std::string SlotText(const SlotRef& ref) {
  return absl::StrCat("rank ", ref.rank(), " slot ", ref.slot());
}

// "a", "a and b", "a, b and c", "a, b, c, d, e and 3 more".
std::string JoinAnd(const std::vector<std::string>& items) {
  if (items.size() <= 1) return items.empty() ? "" : items[0];
  if (items.size() > kSummaryItems) {
    std::vector<std::string> head(items.begin(), items.begin() + kSummaryItems);
    return absl::StrCat(absl::StrJoin(head, ", "), " and ",
                        items.size() - kSummaryItems, " more");
  }
  std::vector<std::string> head(items.begin(), items.end() - 1);
  return absl::StrCat(absl::StrJoin(head, ", "), " and ", items.back());
}

std::string EpochSummary(const EpochAudit& epoch, int num_ids) {
  std::vector<std::string> parts;
  std::vector<std::string> duplicates;
  for (const DuplicatedId& duplicate : epoch.duplicated_ids()) {
    std::vector<std::string> where;
    for (const SlotRef& ref : duplicate.slots()) where.push_back(SlotText(ref));
    duplicates.push_back(absl::StrCat(
        "id ", duplicate.receipt_id(), " ",
        duplicate.count() == 2 ? "twice"
                               : absl::StrCat(duplicate.count(), " times"),
        " (", absl::StrJoin(where, ", "), ")"));
  }
  if (!duplicates.empty()) parts.push_back(JoinAnd(duplicates));
  if (epoch.masked_slots_size() > 0) {
    std::vector<std::string> where;
    for (const SlotRef& ref : epoch.masked_slots()) {
      where.push_back(SlotText(ref));
    }
    parts.push_back(absl::StrCat(epoch.masked_slots_size(), " masked slot",
                                 epoch.masked_slots_size() == 1 ? "" : "s",
                                 " (", JoinAnd(where), ")",
                                 duplicates.empty() ? ", no id twice" : ""));
  }
  if (epoch.dropped_ids_size() > 0) {
    std::vector<std::string> dropped(epoch.dropped_ids().begin(),
                                     epoch.dropped_ids().end());
    parts.push_back(absl::StrCat(dropped.size() == 1 ? "id " : "ids ",
                                 JoinAnd(dropped), " dropped"));
  }
  if (parts.empty()) parts.push_back("every id once");
  return absl::StrCat("epoch ", epoch.epoch(), ": ", epoch.num_slots(),
                      " slots for ", num_ids,
                      " ids: ", absl::StrJoin(parts, "; "));
}

absl::Status CheckAuditArguments(int64_t num_ids, int world_size, int epochs,
                                 const std::vector<int>& local_batch_sizes,
                                 int micro_batches) {
  if (world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("world_size is ", world_size, "; it must be >= 1"));
  }
  if (epochs < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("epochs is ", epochs, "; it must be >= 1"));
  }
  if (num_ids > static_cast<int64_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError(absl::StrCat(
        num_ids, " examples; the audit handles at most 2^31-1"));
  }
  for (int b : local_batch_sizes) {
    if (micro_batches < 1 || b % micro_batches != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          micro_batches, " micro-batches do not cut a local batch of ", b, " evenly"));
    }
  }
  return absl::OkStatus();
}

// The audit's fields that do not depend on the epochs.
SamplerAudit AuditHeader(const SamplerPolicy& policy, const std::string& policy_name,
                         int64_t num_ids, int64_t num_receipts, int world_size,
                         uint64_t seed, const std::vector<int>& local_batch_sizes,
                         int micro_batches) {
  SamplerAudit audit;
  audit.set_micro_batches(micro_batches);
  audit.set_num_ids(static_cast<int32_t>(num_ids));
  audit.set_num_training_views(static_cast<int32_t>(num_ids));
  audit.set_num_receipts(static_cast<int32_t>(num_receipts));
  audit.set_id_meaning(
      "an id is a training view (a dataset index); a receipt with several "
      "views has several ids, so duplicated_ids lists views dealt twice in "
      "one epoch, not the views of one receipt");
  audit.set_world_size(world_size);
  audit.set_seed(static_cast<double>(seed));
  audit.set_seed_exact(seed);
  audit.set_policy(policy_name);
  audit.set_world_size_independent(policy.world_size_independent());
  for (int batch : local_batch_sizes) audit.add_local_batch_sizes(batch);
  return audit;
}

// Every rank builds epoch `e`'s plan on its own; returns rank 0's, and each
// rank's fingerprint in `fingerprints`.
absl::StatusOr<EpochPlan> PlanOfEveryRank(const SamplerPolicy& policy, int64_t num_ids,
                                          int world_size, uint64_t seed, int e,
                                          const std::vector<int>& local_batch_sizes,
                                          std::vector<uint64_t>* fingerprints) {
  OrderRequest request;
  request.num_examples = num_ids;
  request.world_size = world_size;
  request.seed = seed;
  request.epoch = e;
  absl::StatusOr<EpochPlan> plan;
  for (int r = 0; r < world_size; ++r) {
    absl::StatusOr<EpochPlan> rank_plan = BuildEpochPlan(policy, request, local_batch_sizes);
    if (!rank_plan.ok()) {
      return absl::Status(rank_plan.status().code(),
                          absl::StrCat("epoch ", e, ": ", rank_plan.status().message()));
    }
    fingerprints->push_back(rank_plan->Fingerprint());
    if (r == 0) plan = std::move(rank_plan);
  }
  return plan;
}

// Each slot's micro-batch within its update, in `rank`'s epoch order
// (empty for one micro-batch).
std::vector<int32_t> MicroBatchesOf(const EpochPlan& plan, int rank, int micro_batches) {
  std::vector<int32_t> out;
  if (micro_batches <= 1) return out;
  for (int64_t u = 0; u < plan.num_updates(); ++u) {
    const int64_t slots = static_cast<int64_t>(plan.UpdateSlots(rank, u).size());
    for (int64_t i = 0; i < slots; ++i) {
      out.push_back(MicroBatchOf(i, plan.local_batch()[rank], micro_batches));
    }
  }
  return out;
}

// Receipt id of dataset index `index`: `receipt_ids`' or the index's
// decimal text.
std::string IdOf(int64_t index, const std::vector<std::string>* receipt_ids) {
  return receipt_ids != nullptr ? (*receipt_ids)[index] : absl::StrCat(index);
}

// The streamed audit's epoch: every rank's record to `slots`, and the
// summary of samplers/audit.h StreamSamplerAudit into `epoch`.
absl::Status StreamEpoch(const EpochPlan& plan, int64_t num_ids, int micro_batches,
                         const ByteSink& slots, const std::vector<std::string>* receipt_ids,
                         EpochAudit* epoch) {
  std::vector<uint16_t> count(static_cast<size_t>(num_ids), 0);
  std::vector<int32_t> seen_by(static_cast<size_t>(num_ids), -1);  // last rank that saw it
  for (int r = 0; r < plan.world_size(); ++r) {
    const DealtSlots rank_slots = plan.rank_slots(r);
    if (absl::Status s = slots(EncodeRankRecord(epoch->epoch(), r, rank_slots,
                                                MicroBatchesOf(plan, r, micro_batches)));
        !s.ok()) {
      return s;
    }
    RankAudit* rank = epoch->add_ranks();
    rank->set_rank(r);
    rank->set_num_slots(static_cast<int32_t>(rank_slots.size()));
    int32_t s = 0;
    for (const Slot& slot : rank_slots) {
      const int32_t at = s++;
      if (!slot.valid) {
        SlotRef* ref = epoch->add_masked_slots();
        ref->set_rank(r);
        ref->set_slot(at);
        continue;
      }
      rank->set_valid_slots(rank->valid_slots() + 1);
      if (seen_by[slot.dataset_index] != r) {
        seen_by[slot.dataset_index] = r;
        rank->set_unique_ids(rank->unique_ids() + 1);
      }
      uint16_t& c = count[slot.dataset_index];
      if (c < UINT16_MAX) ++c;
    }
    epoch->set_num_slots(epoch->num_slots() + rank->num_slots());
    epoch->set_valid_slots(epoch->valid_slots() + rank->valid_slots());
  }
  // Duplicates in index order, with every valid slot that holds them.
  std::map<int64_t, DuplicatedId*> duplicated;
  for (int64_t i = 0; i < num_ids; ++i) {
    if (count[i] > 0) epoch->set_unique_ids(epoch->unique_ids() + 1);
    if (count[i] == 0) epoch->add_never_seen(IdOf(i, receipt_ids));
    if (count[i] < 2) continue;
    DuplicatedId* duplicate = epoch->add_duplicated_ids();
    duplicate->set_dataset_index(static_cast<int32_t>(i));
    duplicate->set_receipt_id(IdOf(i, receipt_ids));
    duplicated[i] = duplicate;
  }
  for (int r = 0; !duplicated.empty() && r < plan.world_size(); ++r) {
    int32_t s = 0;
    for (const Slot& slot : plan.rank_slots(r)) {
      const int32_t at = s++;
      auto it = duplicated.find(slot.dataset_index);
      if (!slot.valid || it == duplicated.end()) continue;
      SlotRef* ref = it->second->add_slots();
      ref->set_rank(r);
      ref->set_slot(at);
      it->second->set_count(it->second->slots_size());
    }
  }
  for (int64_t index : plan.dropped()) {
    epoch->add_dropped_indices(static_cast<int32_t>(index));
    epoch->add_dropped_ids(IdOf(index, receipt_ids));
  }
  epoch->set_num_updates(static_cast<int32_t>(plan.num_updates()));
  for (int64_t u = 0; u < plan.num_updates(); ++u) {
    epoch->add_global_accepted_per_update(static_cast<int32_t>(plan.GlobalAcceptedCount(u)));
  }
  return absl::OkStatus();
}

void SetAgreement(const std::vector<uint64_t>& fingerprints, EpochAudit* epoch) {
  for (int r = 0; r < epoch->ranks_size(); ++r) {
    epoch->mutable_ranks(r)->set_plan_fingerprint(Hex(fingerprints[r]));
  }
  epoch->set_ranks_agree(
      std::set<uint64_t>(fingerprints.begin(), fingerprints.end()).size() == 1);
}

// Audits epochs 0 .. epochs-1 into `audit`: every rank builds each epoch's
// plan on its own, `audit_epoch` fills the epoch from rank 0's, then the
// ranks' agreement; last, whether every epoch dealt another order.
absl::Status AuditEpochs(
    const SamplerPolicy& policy, int64_t num_ids, int world_size, uint64_t seed, int epochs,
    const std::vector<int>& local_batch_sizes, SamplerAudit* audit,
    const std::function<absl::Status(const EpochPlan&, EpochAudit*)>& audit_epoch) {
  std::set<uint64_t> orders;
  for (int e = 0; e < epochs; ++e) {
    EpochAudit* epoch = audit->add_epochs();
    epoch->set_epoch(e);
    std::vector<uint64_t> fingerprints;
    absl::StatusOr<EpochPlan> plan = PlanOfEveryRank(policy, num_ids, world_size, seed, e,
                                                     local_batch_sizes, &fingerprints);
    if (!plan.ok()) return plan.status();
    if (absl::Status s = audit_epoch(*plan, epoch); !s.ok()) return s;
    SetAgreement(fingerprints, epoch);
    orders.insert(plan->DealtOrderFingerprint());
  }
  audit->set_epoch_orders_differ(epochs >= 2 && static_cast<int>(orders.size()) == epochs);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SamplerAudit> AuditSampler(
    const SamplerPolicy& policy, const std::string& policy_name,
    const std::vector<std::string>& receipt_ids, int world_size, uint64_t seed,
    int epochs, const std::vector<int>& local_batch_sizes, int micro_batches) {
  const int64_t num_ids = static_cast<int64_t>(receipt_ids.size());
  if (absl::Status s = CheckAuditArguments(num_ids, world_size, epochs, local_batch_sizes,
                                           micro_batches);
      !s.ok()) {
    return s;
  }
  SamplerAudit audit = AuditHeader(
      policy, policy_name, num_ids,
      static_cast<int64_t>(std::set<std::string>(receipt_ids.begin(), receipt_ids.end()).size()),
      world_size, seed, local_batch_sizes, micro_batches);
  if (absl::Status s = AuditEpochs(policy, num_ids, world_size, seed, epochs,
                                  local_batch_sizes, &audit,
                                  [&](const EpochPlan& plan, EpochAudit* epoch) {
                                    AuditSlots(plan, receipt_ids, micro_batches, epoch);
                                    return absl::OkStatus();
                                  });
      !s.ok()) {
    return s;
  }
  return audit;
}

absl::StatusOr<SamplerAudit> StreamSamplerAudit(
    const SamplerPolicy& policy, const std::string& policy_name, int64_t num_ids,
    int world_size, uint64_t seed, int epochs, const std::vector<int>& local_batch_sizes,
    int micro_batches, const ByteSink& slots, const std::vector<std::string>* receipt_ids) {
  if (absl::Status s = CheckAuditArguments(num_ids, world_size, epochs, local_batch_sizes,
                                           micro_batches);
      !s.ok()) {
    return s;
  }
  if (num_ids < 0) {
    return absl::InvalidArgumentError(absl::StrCat("num_ids is ", num_ids, "; it must be >= 0"));
  }
  if (receipt_ids != nullptr && static_cast<int64_t>(receipt_ids->size()) != num_ids) {
    return absl::InvalidArgumentError(absl::StrCat(receipt_ids->size(), " receipt ids for ",
                                                   num_ids, " dataset examples"));
  }
  const int64_t num_receipts =
      receipt_ids == nullptr
          ? num_ids
          : static_cast<int64_t>(
                std::set<std::string>(receipt_ids->begin(), receipt_ids->end()).size());
  SamplerAudit audit = AuditHeader(policy, policy_name, num_ids, num_receipts, world_size, seed,
                                   local_batch_sizes, micro_batches);
  if (absl::Status s = slots(EncodeSlotsFileHeader(
          {world_size, epochs, micro_batches, num_ids, seed}));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = AuditEpochs(policy, num_ids, world_size, seed, epochs,
                                  local_batch_sizes, &audit,
                                  [&](const EpochPlan& plan, EpochAudit* epoch) {
                                    return StreamEpoch(plan, num_ids, micro_batches, slots,
                                                       receipt_ids, epoch);
                                  });
      !s.ok()) {
    return s;
  }
  return audit;
}

absl::StatusOr<SamplerAudit> StreamSamplerAuditToFile(
    const SamplerPolicy& policy, const std::string& policy_name, int64_t num_ids,
    int world_size, uint64_t seed, int epochs, const std::vector<int>& local_batch_sizes,
    int micro_batches, const std::string& slots_path,
    const std::vector<std::string>* receipt_ids) {
  Crc32Stream checksum;
  int64_t bytes = 0;
  absl::StatusOr<SamplerAudit> audit;
  absl::Status written = WriteFileAtomicallyFrom(slots_path, [&](const ByteSink& sink) {
    audit = StreamSamplerAudit(
        policy, policy_name, num_ids, world_size, seed, epochs, local_batch_sizes,
        micro_batches,
        [&](absl::string_view piece) {
          checksum.Add(piece);
          bytes += static_cast<int64_t>(piece.size());
          return sink(piece);
        },
        receipt_ids);
    return audit.status();
  });
  if (!audit.ok()) return audit.status();
  if (!written.ok()) return written;
  audit->set_slots_file(std::filesystem::path(slots_path).filename().string());
  audit->set_slots_file_bytes(static_cast<double>(bytes));
  audit->set_slots_file_checksum(checksum.Checksum());
  return audit;
}

int64_t StreamAuditPeakBytes(int64_t num_ids) {
  // randperm's tensor and its copy (8 + 8), the global order (16), the plan
  // being dealt (16), rank 0's plan kept (16), the counts (2 + 4), and the
  // allocator's slack: 829 MB measured at 10 M ids (bench/audit_scaling).
  return num_ids * 90;
}

std::string AuditSummary(const SamplerAudit& audit) {
  std::string summary;
  bool agree = true;
  for (const EpochAudit& epoch : audit.epochs()) {
    absl::StrAppend(&summary, EpochSummary(epoch, audit.num_ids()), "\n");
    agree = agree && epoch.ranks_agree();
  }
  absl::StrAppend(&summary, "ranks agree on every plan: ", agree ? "yes" : "NO",
                  "; epoch orders differ: ",
                  audit.epoch_orders_differ() ? "yes" : "no", "\n");
  return summary;
}

std::vector<std::string> IndexReceiptIds(int num_ids) {
  std::vector<std::string> ids;
  ids.reserve(num_ids > 0 ? num_ids : 0);
  for (int i = 0; i < num_ids; ++i) ids.push_back(absl::StrCat(i));
  return ids;
}

}  // namespace receipt_parity
