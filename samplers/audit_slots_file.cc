#include "samplers/audit_slots_file.h"

#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "io/checksum.h"
#include "io/little_endian.h"
#include "io/untrusted_file.h"

namespace receipt_parity {
namespace {

std::string HeaderText(const SlotsFileHeader& h) {
  return absl::StrCat(h.num_ids, " ids, world size ", h.world_size, ", ", h.epochs,
                      " epoch(s), ", h.micro_batches, " micro-batch(es), seed ", h.seed);
}

}  // namespace

std::string EncodeSlotsFileHeader(const SlotsFileHeader& header) {
  std::string out(kSlotsFileMagic, 8);
  PutU32(&out, kSlotsFileVersion);
  PutU32(&out, static_cast<uint32_t>(header.world_size));
  PutU32(&out, static_cast<uint32_t>(header.epochs));
  PutU32(&out, static_cast<uint32_t>(header.micro_batches));
  PutU64(&out, static_cast<uint64_t>(header.num_ids));
  PutU64(&out, header.seed);
  return out;
}

std::string EncodeRankRecord(int epoch, int rank, const DealtSlots& slots,
                             absl::Span<const int32_t> micro_batch) {
  const size_t n = slots.size();
  std::string out;
  out.reserve(16 + 4 * n + (n + 7) / 8 + micro_batch.size());
  PutU32(&out, static_cast<uint32_t>(epoch));
  PutU32(&out, static_cast<uint32_t>(rank));
  PutU64(&out, n);
  std::string bits((n + 7) / 8, '\0');
  size_t j = 0;
  for (const Slot& slot : slots) {
    PutU32(&out, static_cast<uint32_t>(slot.dataset_index));
    if (slot.valid) bits[j / 8] = static_cast<char>(bits[j / 8] | (1 << (j % 8)));
    ++j;
  }
  out += bits;
  for (int32_t m : micro_batch) out.push_back(static_cast<char>(m));
  return out;
}

namespace {

absl::Status Bad(const std::string& path, const std::string& why) {
  return absl::DataLossError(absl::StrCat(path, ": ", why));
}

// The record of epoch `e`, rank `r` at `in`'s position in the slots file
// at `path` (`micro` micro-batches per update, `num_ids` receipts, `size`
// bytes in all); DataLoss naming the byte or the slot where it is wrong.
absl::StatusOr<RankSlots> ReadRankSlots(const std::string& path, int e, int r,
                                        uint32_t micro, uint64_t num_ids, size_t size,
                                        LittleEndianCursor* in) {
  RankSlots record;
  uint32_t epoch = 0, rank = 0;
  uint64_t n = 0;
  if (!in->U32(&epoch) || !in->U32(&rank) || !in->U64(&n)) {
    return Bad(path,
               absl::StrCat("ends at byte ", in->at(), ", inside epoch ", e, " rank ", r));
  }
  if (static_cast<int>(epoch) != e || static_cast<int>(rank) != r) {
    return Bad(path, absl::StrCat("at byte ", in->at() - 16, ": a record of epoch ", epoch,
                                  " rank ", rank, " where epoch ", e, " rank ", r,
                                  " belongs"));
  }
  absl::string_view indices, bits, micro_batches;
  if (n > size || !in->Take(4 * n, &indices) || !in->Take((n + 7) / 8, &bits) ||
      (micro > 1 && !in->Take(n, &micro_batches))) {
    return Bad(path, absl::StrCat("ends inside epoch ", e, " rank ", r, "'s ", n, " slots"));
  }
  record.epoch = e;
  record.rank = r;
  LittleEndianCursor each(indices);
  for (uint64_t j = 0; j < n; ++j) {
    uint32_t index = 0;
    each.U32(&index);
    if (static_cast<int64_t>(index) >= static_cast<int64_t>(num_ids)) {
      return Bad(path, absl::StrCat("epoch ", e, " rank ", r, " slot ", j, ": index ",
                                    index, " outside [0, ", num_ids, ")"));
    }
    record.indices.push_back(static_cast<int32_t>(index));
    record.valid.push_back((static_cast<unsigned char>(bits[j / 8]) >> (j % 8)) & 1);
    if (micro > 1) {
      record.micro_batch.push_back(static_cast<unsigned char>(micro_batches[j]));
    }
  }
  return record;
}

}  // namespace

absl::StatusOr<SlotsFile> ReadSlotsFile(const std::string& path,
                                        const SlotsFileHeader& expected,
                                        int64_t expected_bytes,
                                        const std::string& expected_checksum) {
  // A regular file in its own folder (no link out, no FIFO) of exactly the
  // size its JSON records, checked before anything is read.
  UntrustedFileRules rules;
  rules.within = std::filesystem::path(path).parent_path().string();
  rules.exact_bytes = expected_bytes;
  rules.exact_bytes_source = "its sampler_audit.json's slots_file_bytes";
  absl::StatusOr<std::string> bytes = ReadUntrustedFile(path, rules);
  if (absl::IsDataLoss(bytes.status())) {
    return absl::DataLossError(absl::StrCat(bytes.status().message(),
                                            " (truncated, or another audit's file)"));
  }
  if (!bytes.ok()) return bytes.status();
  auto bad = [&path](const std::string& why) { return Bad(path, why); };
  if (const std::string checksum = Crc32Checksum(*bytes); checksum != expected_checksum) {
    return bad(absl::StrCat("checksum ", checksum, " != its sampler_audit.json's ",
                            expected_checksum));
  }
  LittleEndianCursor in(*bytes);
  absl::string_view magic;
  uint32_t version = 0, world = 0, epochs = 0, micro = 0;
  uint64_t num_ids = 0, seed = 0;
  if (!in.Take(8, &magic) || magic != absl::string_view(kSlotsFileMagic, 8)) {
    return bad("not a sampler audit slots file (no RPSLOTS1 magic)");
  }
  if (!in.U32(&version) || version != kSlotsFileVersion) {
    return bad(absl::StrCat("format version ", version, "; this build reads ",
                            kSlotsFileVersion));
  }
  SlotsFile file;
  if (!in.U32(&world) || !in.U32(&epochs) || !in.U32(&micro) || !in.U64(&num_ids) ||
      !in.U64(&seed)) {
    return bad("ends inside its header");
  }
  file.header = {static_cast<int>(world), static_cast<int>(epochs), static_cast<int>(micro),
                 static_cast<int64_t>(num_ids), seed};
  if (!(file.header == expected)) {
    return bad(absl::StrCat("from another run: ", HeaderText(file.header),
                            ", but its sampler_audit.json audits ", HeaderText(expected)));
  }
  for (int e = 0; e < static_cast<int>(epochs); ++e) {
    for (int r = 0; r < static_cast<int>(world); ++r) {
      absl::StatusOr<RankSlots> record =
          ReadRankSlots(path, e, r, micro, num_ids, bytes->size(), &in);
      if (!record.ok()) return record.status();
      file.records.push_back(*std::move(record));
    }
  }
  if (!in.done()) return bad(absl::StrCat("goes on after its last record, at byte ", in.at()));
  return file;
}

}  // namespace receipt_parity
