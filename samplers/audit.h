// The sampler audit: what a sampler policy does to every epoch (which
// example each rank trains in which slot, duplicates, masked slots, dropped
// and never-seen ids, whether the ranks agree and the epochs differ), as the
// SamplerAudit message of samplers/audit.proto (sampler_audit.json) plus a
// short human summary.
//
// Used by the //samplers:audit binary (ids "0".."n-1") and by the trainer
// (the real dataset's receipt ids).
//
// Thread safety: stateless functions; safe to call concurrently if the
// policy's Order() is.
#ifndef RECEIPT_PARITY_SAMPLERS_AUDIT_H_
#define RECEIPT_PARITY_SAMPLERS_AUDIT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "io/atomic_file.h"
#include "samplers/audit.pb.h"
#include "samplers/sampler_policy.h"

namespace receipt_parity {

// Audits epochs 0 .. epochs-1 of `policy` over a dataset whose example i has
// receipt id receipt_ids[i]. `policy_name` is recorded as is.
// local_batch_sizes: slots per rank per update (samplers/epoch_plan.h).
//
// Each epoch's plan is built once per rank, as every rank builds it on its
// own, and the ranks agree when the fingerprints are equal. A duplicate is
// a dataset example held by two or more VALID slots of one epoch; masked
// slots are never counted as seen.
//
// micro_batches: gradient accumulation's micro-batches per rank and update;
// above 1, every slot's micro-batch is recorded (samplers/micro_batches.h).
//
// Errors: InvalidArgument for world_size < 1, epochs < 1, more than 2^31-1
// examples, local_batch_sizes that BuildEpochPlan() rejects or that
// micro_batches does not divide (the message names the value); errors of
// the policy pass through.
absl::StatusOr<SamplerAudit> AuditSampler(
    const SamplerPolicy& policy, const std::string& policy_name,
    const std::vector<std::string>& receipt_ids, int world_size, uint64_t seed,
    int epochs, const std::vector<int>& local_batch_sizes, int micro_batches = 1);

// The human summary of an audit, one line per epoch and a last line on
// agreement, e.g.
//   epoch 0: 48 slots for 47 ids: id 17 twice (rank 0 slot 0, rank 2 slot 15)
//   epoch 0: 48 slots for 47 ids: 1 masked slot (rank 2 slot 15), no id twice
//   epoch 0: 45 slots for 47 ids: ids 3 and 9 dropped
//   ranks agree on every plan: yes; epoch orders differ: yes
std::string AuditSummary(const SamplerAudit& audit);

// Above this many slots (ids x epochs) an audit is large: its per-slot
// record goes to a side file and its JSON keeps the summary (the
// //samplers:audit default, and a run's sampler_audit.json).
inline constexpr int64_t kAuditSlotsFileAbove = 100000;

// A large audit of dataset indices 0..num_ids-1 whose receipt ids are
// `receipt_ids` (by dataset index, num_ids of them), or "0".."n-1" when
// nullptr (a bare dataset size, as //samplers:audit --num_ids): the same
// audit as AuditSampler, but every slot goes to `slots` as the side file
// of samplers/audit_slots_file.h (header first, then each epoch's ranks as
// their plans are built: the audit is never whole in memory), and the
// returned SamplerAudit is the summary: each RankAudit keeps rank,
// num_slots, valid_slots, unique_ids and plan_fingerprint but no indices,
// receipt_ids, valid or micro_batch; each EpochAudit keeps everything but
// `updates` (global_accepted_per_update stays); the caller records the
// side file (slots_file, slots_file_bytes, slots_file_checksum).
// Errors: AuditSampler's, and the sink's.
absl::StatusOr<SamplerAudit> StreamSamplerAudit(
    const SamplerPolicy& policy, const std::string& policy_name, int64_t num_ids,
    int world_size, uint64_t seed, int epochs, const std::vector<int>& local_batch_sizes,
    int micro_batches, const ByteSink& slots,
    const std::vector<std::string>* receipt_ids = nullptr);

// StreamSamplerAudit with the slots written to `slots_path` as they come,
// atomically (a temp file, fsynced, renamed: a failed audit leaves no side
// file), and the summary naming it: slots_file (its file name, the JSON
// being meant for the same folder), slots_file_bytes and
// slots_file_checksum (CRC-32). Errors: StreamSamplerAudit's, and Internal
// for the file, naming it.
absl::StatusOr<SamplerAudit> StreamSamplerAuditToFile(
    const SamplerPolicy& policy, const std::string& policy_name, int64_t num_ids,
    int world_size, uint64_t seed, int epochs, const std::vector<int>& local_batch_sizes,
    int micro_batches, const std::string& slots_path,
    const std::vector<std::string>* receipt_ids = nullptr);

// Bytes a StreamSamplerAudit of `num_ids` ids holds at its peak, about
// (the permutation, the global order, one rank's plan being built and rank
// 0's kept, the per-id counts).
int64_t StreamAuditPeakBytes(int64_t num_ids);

// "0", "1", ..., "n-1": receipt ids for auditing a bare dataset size.
std::vector<std::string> IndexReceiptIds(int num_ids);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_SAMPLERS_AUDIT_H_
