#include "checkpoint/recovery.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "checkpoint/generation_layout.h"
#include "checkpoint/in_process_save.h"
#include "checkpoint/manifest_file.h"
#include "checkpoint/save_generation.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "io/atomic_file.h"
#include "gtest/gtest.h"
#include "io/atomic_file.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kWorld = 2;

void Overwrite(const fs::path& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
}

void FlipByte(const fs::path& path, size_t offset) {
  std::string bytes = *ReadFileToString(path.string());
  ASSERT_LT(offset, bytes.size());
  bytes[offset] = static_cast<char>(bytes[offset] ^ 0x01);
  Overwrite(path, bytes);
}

// Generations 1 and 2, both complete.
std::string TwoGenerations(const std::string& name) {
  const std::string root = FreshTestDir(name);
  EXPECT_TRUE(SaveAllRanks(root, 1, kWorld).ok());
  EXPECT_TRUE(SaveAllRanks(root, 2, kWorld).ok());
  return root;
}

struct Corruption {
  std::string name;
  std::function<void(const fs::path& gen_dir)> apply;
  // Expected in the reason, after "gen-000002: ".
  std::string reason;
  // Also expected in the reason, anywhere (e.g. after the MANIFEST's path).
  std::string detail;
};

void PrintTo(const Corruption& corruption, std::ostream* os) {
  *os << corruption.name;
}

class CorruptionTest : public ::testing::TestWithParam<Corruption> {};

TEST_P(CorruptionTest, FallsBackToThePreviousGenerationNamingTheFile) {
  const Corruption& corruption = GetParam();
  const std::string root = TwoGenerations("corrupt_" + corruption.name);
  corruption.apply(GenerationPath(root, 2));

  absl::StatusOr<RecoveryDecision> decision = FindRestorable(root);
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->generation, 1);
  EXPECT_EQ(decision->manifest.generation(), 1);
  ASSERT_EQ(decision->skipped.size(), 1u);
  EXPECT_EQ(decision->skipped[0].generation, 2);
  EXPECT_THAT(decision->skipped[0].reason,
              HasSubstr("gen-000002: " + corruption.reason));
  EXPECT_THAT(decision->skipped[0].reason, HasSubstr(corruption.detail));
  EXPECT_TRUE(decision->partial_folders.empty());
  for (int rank = 0; rank < kWorld; ++rank) {
    EXPECT_TRUE(*ReadShardBytes(*decision, rank) == TestShardBytes(1, rank));
  }

  absl::StatusOr<RecoveryDecision> stopped =
      FindRestorable(root, {/*stop_on_corruption=*/true});
  EXPECT_EQ(stopped.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(stopped.status().message(), HasSubstr(corruption.reason));
  EXPECT_THAT(stopped.status().message(), HasSubstr("stop_on_corruption"));

  // With generation 1 corrupted the same way, nothing is left.
  corruption.apply(GenerationPath(root, 1));
  absl::StatusOr<RecoveryDecision> none = FindRestorable(root);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(none.status().message(), HasSubstr("no restorable"));
  EXPECT_THAT(none.status().message(),
              HasSubstr("gen-000001: " + corruption.reason));
}

fs::path Shard(const fs::path& gen_dir, int rank) {
  return gen_dir / ShardFileName(rank);
}

INSTANTIATE_TEST_SUITE_P(
    EachFile, CorruptionTest,
    ::testing::Values(
        Corruption{"flip_shard0",
                   [](const fs::path& g) { FlipByte(Shard(g, 0), 1234); },
                   "shard-rank-00000.pt: checksum"},
        Corruption{"flip_shard1",
                   [](const fs::path& g) { FlipByte(Shard(g, 1), 0); },
                   "shard-rank-00001.pt: checksum"},
        Corruption{"truncate_shard1",
                   [](const fs::path& g) { fs::resize_file(Shard(g, 1), 123); },
                   "shard-rank-00001.pt: size 123 != manifest 40000"},
        Corruption{"delete_shard0",
                   [](const fs::path& g) { fs::remove(Shard(g, 0)); },
                   "shard-rank-00000.pt: missing"},
        Corruption{"truncate_manifest",
                   [](const fs::path& g) {
                     fs::resize_file(g / kManifestFileName, 100);
                   },
                   "MANIFEST unreadable"},
        Corruption{"flip_manifest_value",
                   [](const fs::path& g) {
                     const fs::path path = g / kManifestFileName;
                     const std::string text = *ReadFileToString(path.string());
                     FlipByte(path, text.find("cnn@deadbeef") + 4);
                   },
                   "MANIFEST: checksum"},
        Corruption{"manifest_of_another_generation",
                   [](const fs::path& g) {
                     // Well-formed and sealed, but names another generation.
                     const int64_t generation =
                         *ParseGenerationFolderName(g.filename().string());
                     CheckpointManifest manifest =
                         *ReadManifest(g.string(), generation);
                     manifest.set_generation(generation + 100);
                     ASSERT_TRUE(WriteManifest(g.string(), manifest).ok());
                   },
                   "MANIFEST: generation"},
        // Issue 26: files read as untrusted input, never a crash or a hang.
        Corruption{"sparse_huge_shard",
                   [](const fs::path& g) {
                     fs::resize_file(Shard(g, 1), uintmax_t{64} << 30);
                   },
                   "shard-rank-00001.pt: size 68719476736 != manifest 40000"},
        Corruption{"fifo_shard",
                   [](const fs::path& g) {
                     fs::remove(Shard(g, 0));
                     ASSERT_EQ(mkfifo(Shard(g, 0).c_str(), 0600), 0);
                   },
                   "shard-rank-00000.pt is a FIFO, not a regular file"},
        Corruption{"device_link_shard",
                   [](const fs::path& g) {
                     fs::remove(Shard(g, 0));
                     fs::create_symlink("/dev/zero", Shard(g, 0));
                   },
                   "shard-rank-00000.pt: a link leading out of"},
        Corruption{"shard_linked_outside",
                   [](const fs::path& g) {
                     // A byte-identical shard kept elsewhere: not trusted.
                     const fs::path elsewhere = FreshTestDir(
                         "elsewhere_" + g.filename().string() + "_" + g.parent_path().filename().string());
                     fs::copy_file(Shard(g, 1), elsewhere / "shard");
                     fs::remove(Shard(g, 1));
                     fs::create_symlink(elsewhere / "shard", Shard(g, 1));
                   },
                   "shard-rank-00001.pt: a link leading out of"},
        Corruption{"fifo_manifest",
                   [](const fs::path& g) {
                     fs::remove(g / kManifestFileName);
                     ASSERT_EQ(mkfifo((g / kManifestFileName).c_str(), 0600), 0);
                   },
                   "MANIFEST unreadable: ", "MANIFEST is a FIFO, not a regular file"},
        Corruption{"huge_manifest",
                   [](const fs::path& g) {
                     fs::resize_file(g / kManifestFileName, uintmax_t{1} << 30);
                   },
                   "MANIFEST unreadable: ",
                   "MANIFEST: size 1073741824 is over the bound of 16777216 bytes"}),
    [](const auto& info) { return info.param.name; });

// Every file under `dir`, by relative path, with its bytes.
std::map<std::string, std::string> Files(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) {
      files[fs::relative(e.path(), dir).string()] = *ReadFileToString(e.path().string());
    }
  }
  return files;
}

// Issue 26: a generation folder that is a link to a generation kept
// elsewhere is not resumed from; setting it aside moves the link, retention
// deletes the link; the generation elsewhere stays byte for byte.
TEST(RecoveryTest, AGenerationLinkedFromOutsideIsNeitherTrustedNorTouched) {
  const std::string root = TwoGenerations("linked_generation");
  const std::string kept = FreshTestDir("kept_elsewhere");
  ASSERT_TRUE(SaveAllRanks(kept, 3, kWorld).ok());
  const std::map<std::string, std::string> before = Files(kept);
  fs::create_directory_symlink(GenerationPath(kept, 3), GenerationPath(root, 3));

  absl::StatusOr<RecoveryDecision> decision = FindRestorable(root);
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->generation, 2);
  ASSERT_EQ(decision->skipped.size(), 1u);
  EXPECT_THAT(decision->skipped[0].reason,
              HasSubstr("gen-000003: a link leading out of " + root));
  EXPECT_TRUE(decision->partial_folders.empty());
  EXPECT_TRUE(CleanUpPartialGenerations(root).ok());
  absl::StatusOr<std::vector<std::string>> moved = SetAsideCorruptGenerations(*decision);
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_THAT(*moved, ElementsAre(HasSubstr("gen-000003 -> corrupt-gen-000003")));
  EXPECT_TRUE(fs::is_symlink(fs::path(root) / "corrupt-gen-000003"));
  EXPECT_EQ(Files(kept), before);

  // An old generation that is a link: retention deletes the link only.
  fs::remove_all(GenerationPath(root, 1));
  fs::create_directory_symlink(GenerationPath(kept, 3), GenerationPath(root, 1));
  ASSERT_TRUE(PruneGenerations(root, 1, 2).ok());
  EXPECT_FALSE(fs::exists(fs::symlink_status(GenerationPath(root, 1))));
  EXPECT_TRUE(fs::exists(GenerationPath(root, 2)));
  EXPECT_EQ(Files(kept), before);
}

TEST(RecoveryTest, NoFlippedManifestByteIsEverTrusted) {
  const std::string root = TwoGenerations("manifest_every_byte");
  const fs::path manifest =
      fs::path(GenerationPath(root, 2)) / kManifestFileName;
  const std::string original = *ReadFileToString(manifest.string());
  const CheckpointManifest good = *ReadManifest(GenerationPath(root, 2), 2);
  int rejected = 0;
  for (size_t offset = 0; offset < original.size(); ++offset) {
    FlipByte(manifest, offset);
    absl::StatusOr<RecoveryDecision> decision = FindRestorable(root);
    ASSERT_TRUE(decision.ok()) << decision.status();
    if (decision->generation == 2) {
      // Only a harmless flip (e.g. in white space) may keep generation 2.
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
          decision->manifest, good))
          << "byte " << offset;
    } else {
      EXPECT_EQ(decision->generation, 1) << "byte " << offset;
      EXPECT_THAT(decision->skipped[0].reason, HasSubstr("MANIFEST"));
      ++rejected;
    }
    Overwrite(manifest, original);
  }
  EXPECT_GT(rejected, static_cast<int>(original.size()) / 2);
}

TEST(RecoveryTest, EmptyOrMissingRootIsAFreshStart) {
  absl::StatusOr<RecoveryDecision> missing =
      FindRestorable(FreshTestDir("fresh") + "/checkpoints");
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_FALSE(missing->has_generation());
  EXPECT_EQ(ReadShardBytes(*missing, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RecoveryTest, KilledFirstSaveIsAFreshStartAndIsCleanedUp) {
  const std::string root = FreshTestDir("first_save_partial");
  fs::create_directories(GenerationPath(root, 1));
  Overwrite(fs::path(GenerationPath(root, 1)) / ShardFileName(0), "half");
  absl::StatusOr<RecoveryDecision> decision = FindRestorable(root);
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_FALSE(decision->has_generation());
  EXPECT_THAT(decision->partial_folders, ElementsAre("gen-000001"));
  EXPECT_EQ(CleanUpPartialGenerations(root)->size(), 1u);
  EXPECT_FALSE(fs::exists(GenerationPath(root, 1)));
}

TEST(RecoveryTest, InterruptedSaveThenASuccessfulOneChoosesTheNewest) {
  const std::string root = FreshTestDir("interrupted_then_saved");
  ASSERT_TRUE(SaveAllRanks(root, 1, kWorld).ok());
  // What a save killed after rank 0's shard leaves (no clean-up yet).
  fs::create_directories(GenerationPath(root, 2));
  Overwrite(fs::path(GenerationPath(root, 2)) / ShardFileName(0),
            TestShardBytes(2, 0));
  ASSERT_EQ(*NextGeneration(root), 3);
  ASSERT_TRUE(SaveAllRanks(root, 3, kWorld).ok());

  absl::StatusOr<RecoveryDecision> decision =
      FindRestorable(root, {/*stop_on_corruption=*/true});
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->generation, 3);
  EXPECT_TRUE(decision->skipped.empty());
  EXPECT_THAT(decision->partial_folders, ElementsAre("gen-000002"));
  EXPECT_TRUE(*ReadShardBytes(*decision, 1) == TestShardBytes(3, 1));
}

TEST(RecoveryTest, CorruptNewerGenerationsAreSetAsideSoOnlyVerifiedOnesCount) {
  const std::string root = TwoGenerations("set_aside");
  ASSERT_TRUE(SaveAllRanks(root, 3, kWorld).ok());
  FlipByte(fs::path(GenerationPath(root, 3)) / ShardFileName(1), 0);
  // A stray folder at the top of the range with garbage in its MANIFEST.
  fs::create_directories(GenerationPath(root, 999999));
  Overwrite(fs::path(GenerationPath(root, 999999)) / "MANIFEST", "garbage");
  absl::StatusOr<RecoveryDecision> decision = FindRestorable(root);
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->generation, 2);

  absl::StatusOr<std::vector<std::string>> moved = SetAsideCorruptGenerations(*decision);
  ASSERT_TRUE(moved.ok()) << moved.status();
  ASSERT_EQ(moved->size(), 2u);
  EXPECT_THAT((*moved)[0], HasSubstr("gen-999999 -> corrupt-gen-999999: gen-999999: "));
  EXPECT_THAT((*moved)[1], HasSubstr("gen-000003 -> corrupt-gen-000003: gen-000003: "));
  EXPECT_TRUE(fs::exists(fs::path(root) / "corrupt-gen-000003" / ShardFileName(1)));
  // Numbering continues after the newest generation that verifies.
  EXPECT_EQ(*NextGeneration(root), 3);
  ASSERT_TRUE(SaveAllRanks(root, 3, kWorld).ok());
  // Retention counts verified generations only: keep_last 2 keeps 2 and 3.
  ASSERT_TRUE(PruneGenerations(root, 2, 3).ok());
  EXPECT_FALSE(fs::exists(GenerationPath(root, 1)));
  EXPECT_TRUE(fs::exists(GenerationPath(root, 2)));
  absl::StatusOr<RecoveryDecision> again = FindRestorable(root, {/*stop_on_corruption=*/true});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->generation, 3);
  // A second corruption of the same number gets its own name.
  FlipByte(fs::path(GenerationPath(root, 3)) / ShardFileName(0), 0);
  absl::StatusOr<RecoveryDecision> third = FindRestorable(root);
  ASSERT_TRUE(third.ok());
  absl::StatusOr<std::vector<std::string>> moved_again = SetAsideCorruptGenerations(*third);
  ASSERT_TRUE(moved_again.ok());
  EXPECT_THAT(*moved_again, ElementsAre(HasSubstr("-> corrupt-gen-000003.2: ")));
}

TEST(RecoveryTest, PartialNewestIsNotCorruption) {
  const std::string root = FreshTestDir("partial_newest_stop");
  ASSERT_TRUE(SaveAllRanks(root, 1, kWorld).ok());
  fs::create_directories(GenerationPath(root, 2));
  absl::StatusOr<RecoveryDecision> decision =
      FindRestorable(root, {/*stop_on_corruption=*/true});
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->generation, 1);
}

TEST(RecoveryTest, ReadShardBytesVerifiesAgain) {
  const std::string root = TwoGenerations("read_verifies_again");
  absl::StatusOr<RecoveryDecision> decision = FindRestorable(root);
  ASSERT_TRUE(decision.ok()) << decision.status();
  FlipByte(fs::path(GenerationPath(root, 2)) / ShardFileName(1), 77);
  absl::StatusOr<std::string> bytes = ReadShardBytes(*decision, 1);
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bytes.status().message(),
              HasSubstr("gen-000002/shard-rank-00001.pt: checksum"));
  EXPECT_EQ(ReadShardBytes(*decision, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RecoveryTest, CleanUpRemovesTempFilesButKeepsAdvertisedData) {
  const std::string root = TwoGenerations("cleanup_temps");
  const fs::path gen2 = GenerationPath(root, 2);
  const fs::path stray = TempPathFor((gen2 / ShardFileName(0)).string());
  Overwrite(stray, "stray");
  fs::create_directories(GenerationPath(root, 3));
  absl::StatusOr<std::vector<std::string>> removed =
      CleanUpPartialGenerations(root);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_THAT(*removed, ::testing::UnorderedElementsAre(
                            stray.string(), GenerationPath(root, 3)));
  absl::StatusOr<RecoveryDecision> decision = FindRestorable(root);
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->generation, 2);
  EXPECT_TRUE(*ReadShardBytes(*decision, 0) == TestShardBytes(2, 0));
}

}  // namespace
}  // namespace receipt_parity
