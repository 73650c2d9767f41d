// sampler_audit.slots: the per-slot record of a large sampler audit, beside
// its sampler_audit.json (which then keeps the summary only: counts,
// duplicates, masked and dropped slots, never-seen ids, fingerprints, the
// per-update accepted counts). Written epoch by epoch and rank by rank as
// the audit goes (samplers/audit.h StreamSamplerAudit), so no audit is ever
// whole in memory; read back by tests and by the cross-check against
// PyTorch's DistributedSampler.
//
// Layout, every integer little-endian:
//   header   8 bytes "RPSLOTS1", uint32 version (1), uint32 world_size,
//            uint32 epochs, uint32 micro_batches, uint64 num_ids,
//            uint64 seed                                     (40 bytes)
//   then, for each epoch e = 0 .. epochs-1 and each rank r = 0 .. W-1:
//            uint32 epoch, uint32 rank, uint64 num_slots,
//            num_slots x int32: the slot's dataset index, in the rank's
//              epoch order (RankAudit.indices),
//            ceil(num_slots / 8) bytes: slot j is valid when bit j % 8 of
//              byte j / 8 is set (RankAudit.valid),
//            with micro_batches > 1, num_slots x uint8: the slot's
//              micro-batch (RankAudit.micro_batch).
// The JSON names the file (slots_file, a name in the JSON's folder) and
// records its size and CRC-32 (slots_file_bytes, slots_file_checksum).
#ifndef RECEIPT_PARITY_SAMPLERS_AUDIT_SLOTS_FILE_H_
#define RECEIPT_PARITY_SAMPLERS_AUDIT_SLOTS_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "samplers/epoch_plan.h"

namespace receipt_parity {

inline constexpr char kSlotsFileMagic[] = "RPSLOTS1";
inline constexpr uint32_t kSlotsFileVersion = 1;
inline constexpr int64_t kSlotsFileHeaderBytes = 40;

// What a slots file is of: its header.
struct SlotsFileHeader {
  int world_size = 1;
  int epochs = 1;
  int micro_batches = 1;
  int64_t num_ids = 0;
  uint64_t seed = 0;

  bool operator==(const SlotsFileHeader& o) const {
    return world_size == o.world_size && epochs == o.epochs &&
           micro_batches == o.micro_batches && num_ids == o.num_ids && seed == o.seed;
  }
};

// The header's 40 bytes.
std::string EncodeSlotsFileHeader(const SlotsFileHeader& header);

// One rank's record of one epoch. `micro_batch` is empty, or one entry per
// slot (written only when the header's micro_batches > 1).
std::string EncodeRankRecord(int epoch, int rank, const DealtSlots& slots,
                             absl::Span<const int32_t> micro_batch);

// One rank's record, read back.
struct RankSlots {
  int epoch = 0;
  int rank = 0;
  std::vector<int32_t> indices;
  std::vector<bool> valid;
  std::vector<int32_t> micro_batch;  // empty when micro_batches == 1
};

struct SlotsFile {
  SlotsFileHeader header;
  // epochs * world_size records, epoch-major, ranks in order.
  std::vector<RankSlots> records;
};

// Reads `path` whole, checked against what its sampler_audit.json says:
// `expected` (the audit's num_ids, world_size, epochs, micro_batches,
// seed), `expected_bytes` and `expected_checksum` ("crc32:xxxxxxxx").
// It is read as untrusted input (io/untrusted_file.h): a regular file that
// resolves inside its own folder, of exactly `expected_bytes`, checked
// before it is opened. Errors, each naming `path`: DataLoss for a size or
// checksum that is not the JSON's (a truncated file), a bad magic or
// version, a header of another audit ("from another run"), a record out of
// order, an index outside [0, num_ids), a file that ends inside a record or
// goes on after the last one; FailedPrecondition for a FIFO, a folder or a
// link out of its folder; NotFound when it is missing.
absl::StatusOr<SlotsFile> ReadSlotsFile(const std::string& path,
                                        const SlotsFileHeader& expected,
                                        int64_t expected_bytes,
                                        const std::string& expected_checksum);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_SAMPLERS_AUDIT_SLOTS_FILE_H_
