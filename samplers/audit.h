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

// "0", "1", ..., "n-1": receipt ids for auditing a bare dataset size.
std::vector<std::string> IndexReceiptIds(int num_ids);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_SAMPLERS_AUDIT_H_
