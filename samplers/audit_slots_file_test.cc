#include "samplers/audit_slots_file.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "io/checksum.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "samplers/audit.h"
#include "samplers/drop_tail.h"
#include "samplers/duplicate_pad.h"
#include "samplers/masked_tail.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kSeed = 1234;

template <typename FactoryT>
std::unique_ptr<SamplerPolicy> Policy() {
  FactoryT factory;
  return std::move(*factory.Create(*factory.CreateEmptyOptions()));
}

struct Case {
  std::string name;
  std::unique_ptr<SamplerPolicy> policy;
  int num_ids;
  std::vector<int> local_batch;
  int micro_batches;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  cases.push_back({"masked_tail", Policy<MaskedTailFactory>(), 47, {1, 1, 1}, 1});
  cases.push_back({"duplicate_pad", Policy<DuplicatePadFactory>(), 47, {1, 1, 1}, 1});
  cases.push_back({"drop_tail", Policy<DropTailFactory>(), 47, {1, 1, 1}, 1});
  cases.push_back({"masked_tail", Policy<MaskedTailFactory>(), 50, {4, 2}, 2});
  return cases;
}

std::string WriteFile(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// The streamed audit and its side file against the whole one.
TEST(StreamSamplerAuditTest, SummaryAndSideFileAreTheWholeAuditsFigures) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name + " " + std::to_string(c.micro_batches));
    const int world = static_cast<int>(c.local_batch.size());
    absl::StatusOr<SamplerAudit> whole =
        AuditSampler(*c.policy, c.name, IndexReceiptIds(c.num_ids), world, kSeed, 3,
                     c.local_batch, c.micro_batches);
    ASSERT_TRUE(whole.ok()) << whole.status();
    std::string bytes;
    absl::StatusOr<SamplerAudit> streamed = StreamSamplerAudit(
        *c.policy, c.name, c.num_ids, world, kSeed, 3, c.local_batch, c.micro_batches,
        [&bytes](absl::string_view piece) {
          bytes.append(piece.data(), piece.size());
          return absl::OkStatus();
        });
    ASSERT_TRUE(streamed.ok()) << streamed.status();
    // The summary: the whole audit without its per-slot lists.
    SamplerAudit summary = *whole;
    for (EpochAudit& epoch : *summary.mutable_epochs()) {
      epoch.clear_updates();
      for (RankAudit& rank : *epoch.mutable_ranks()) {
        rank.clear_indices();
        rank.clear_receipt_ids();
        rank.clear_valid();
        rank.clear_micro_batch();
      }
    }
    EXPECT_EQ(streamed->DebugString(), summary.DebugString());
    // The side file: every rank's slots, read back.
    const std::string path = WriteFile("streamed.slots", bytes);
    const SlotsFileHeader header{world, 3, c.micro_batches, c.num_ids, kSeed};
    absl::StatusOr<SlotsFile> file = ReadSlotsFile(
        path, header, static_cast<int64_t>(bytes.size()), Crc32Checksum(bytes));
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_EQ(file->records.size(), static_cast<size_t>(3 * world));
    for (const RankSlots& record : file->records) {
      const RankAudit& rank = whole->epochs(record.epoch).ranks(record.rank);
      EXPECT_EQ(record.indices, std::vector<int32_t>(rank.indices().begin(),
                                                     rank.indices().end()));
      EXPECT_EQ(record.valid, std::vector<bool>(rank.valid().begin(), rank.valid().end()));
      EXPECT_EQ(record.micro_batch, std::vector<int32_t>(rank.micro_batch().begin(),
                                                         rank.micro_batch().end()));
    }
  }
}

class SlotsFileRefusalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(StreamSamplerAudit(*Policy<MaskedTailFactory>(), "masked_tail", 47, 3, kSeed,
                                   2, {1, 1, 1}, 1,
                                   [this](absl::string_view piece) {
                                     bytes_.append(piece.data(), piece.size());
                                     return absl::OkStatus();
                                   })
                    .ok());
  }
  absl::Status Read(const std::string& bytes, const SlotsFileHeader& header,
                    int64_t size, const std::string& checksum) {
    path_ = WriteFile("refused.slots", bytes);
    return ReadSlotsFile(path_, header, size, checksum).status();
  }
  const SlotsFileHeader header_{3, 2, 1, 47, kSeed};
  std::string bytes_;
  std::string path_;
};

TEST_F(SlotsFileRefusalTest, ATruncatedFileIsRefusedWithItsPath) {
  const absl::Status s = Read(bytes_.substr(0, bytes_.size() - 5), header_,
                              static_cast<int64_t>(bytes_.size()), Crc32Checksum(bytes_));
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(path_ + ": "));
  EXPECT_THAT(std::string(s.message()), HasSubstr("truncated"));
}

TEST_F(SlotsFileRefusalTest, AChangedByteIsRefusedByItsChecksum) {
  std::string changed = bytes_;
  changed[100] = static_cast<char>(changed[100] ^ 1);
  const absl::Status s = Read(changed, header_, static_cast<int64_t>(bytes_.size()),
                              Crc32Checksum(bytes_));
  EXPECT_THAT(std::string(s.message()), HasSubstr("checksum"));
}

TEST_F(SlotsFileRefusalTest, AnotherRunsFileIsRefused) {
  // Whole and consistent, but of another seed than the JSON audits.
  SlotsFileHeader other = header_;
  other.seed = kSeed + 1;
  const absl::Status s = Read(bytes_, other, static_cast<int64_t>(bytes_.size()),
                              Crc32Checksum(bytes_));
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("from another run"));
  EXPECT_THAT(std::string(s.message()), HasSubstr(path_));
}

TEST_F(SlotsFileRefusalTest, ALinkOutOfItsFolderAndAFifoAreRefusedUnread) {
  const std::string outside = WriteFile("outside.slots", bytes_);
  const std::string folder = ::testing::TempDir() + "/audit_folder";
  std::filesystem::create_directories(folder);
  const std::string link = folder + "/audit.slots";
  std::filesystem::remove(link);
  std::filesystem::create_symlink(outside, link);
  absl::Status s = ReadSlotsFile(link, header_, static_cast<int64_t>(bytes_.size()),
                                 Crc32Checksum(bytes_))
                       .status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(link));
  const std::string fifo = folder + "/fifo.slots";
  std::filesystem::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  s = ReadSlotsFile(fifo, header_, static_cast<int64_t>(bytes_.size()), Crc32Checksum(bytes_))
          .status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("FIFO"));
}

TEST_F(SlotsFileRefusalTest, NotASlotsFileAndAMissingOneAreNamed) {
  std::string text(bytes_.size(), 'x');
  absl::Status s = Read(text, header_, static_cast<int64_t>(text.size()), Crc32Checksum(text));
  EXPECT_THAT(std::string(s.message()), HasSubstr("no RPSLOTS1 magic"));
  EXPECT_TRUE(absl::IsNotFound(
      ReadSlotsFile(::testing::TempDir() + "/absent.slots", header_, 1, "crc32:0")
          .status()));
}

}  // namespace
}  // namespace receipt_parity
