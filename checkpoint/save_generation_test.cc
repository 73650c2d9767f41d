#include "checkpoint/save_generation.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "io/checksum.h"
#include "checkpoint/generation_layout.h"
#include "checkpoint/in_process_save.h"
#include "checkpoint/manifest_file.h"
#include "checkpoint/recovery.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/atomic_file.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kWorld = 2;

// Runs `body` in a forked child and returns its wait status; the child
// exits 0 if `body` returns.
int RunInChild(const std::function<void()>& body) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

// Sizes of the temp files in `dir` whose final name is `final_name`.
std::vector<uintmax_t> TempSizes(const fs::path& dir,
                                 const std::string& final_name) {
  std::vector<uintmax_t> sizes;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, final_name) && IsTempFileName(name)) {
      sizes.push_back(fs::file_size(entry.path()));
    }
  }
  return sizes;
}

// Ranks whose gen-2 shard must be durable at its final name when `killed`
// dies at `point`: rank 0 writes first and gathers; rank 1 writes while
// rank 0 waits; the MANIFEST comes last.
bool MustBeFinal(int shard_rank, KillPoint point, int killed) {
  const bool manifest_point =
      point == KillPoint::kBeforeManifest || point == KillPoint::kMidManifest;
  if (manifest_point) return shard_rank <= killed || killed == 0;
  return shard_rank < killed;
}

// The temporary file the killed rank left in generation 2's folder `gen2`
// at `point`: none, half a shard, a whole one, or rank 0's part-written
// MANIFEST.
void ExpectTempFilesLeftAt(const fs::path& gen2, KillPoint point, int killed) {
  const std::string killed_shard = ShardFileName(killed);
  const uintmax_t full = TestShardBytes(2, killed).size();
  switch (point) {
    case KillPoint::kBeforeShard:
      EXPECT_THAT(TempSizes(gen2, killed_shard), ElementsAre());
      break;
    case KillPoint::kMidShard:
      EXPECT_THAT(TempSizes(gen2, killed_shard), ElementsAre(full / 2));
      break;
    case KillPoint::kAfterShardBeforeRename:
      EXPECT_THAT(TempSizes(gen2, killed_shard), ElementsAre(full));
      break;
    case KillPoint::kBeforeManifest:
      EXPECT_THAT(TempSizes(gen2, kManifestFileName), ElementsAre());
      break;
    case KillPoint::kMidManifest:
      // Only rank 0 writes a MANIFEST; on rank 1 this point is "shard
      // durable, not confirmed".
      if (killed == 0) {
        std::vector<uintmax_t> sizes = TempSizes(gen2, kManifestFileName);
        ASSERT_EQ(sizes.size(), 1u);
        EXPECT_GT(sizes[0], 0u);
      } else {
        EXPECT_THAT(TempSizes(gen2, kManifestFileName), ElementsAre());
      }
      break;
  }
}

class KillPointTest
    : public ::testing::TestWithParam<std::tuple<KillPoint, int>> {};

TEST_P(KillPointTest, KilledSaveLeavesThePreviousGenerationRestorable) {
  const auto [point, killed] = GetParam();
  const std::string root = FreshTestDir(
      absl::StrCat("kill_", KillPointName(point), "_rank", killed));
  SaveOptions options;
  options.keep_last = 2;
  options.fault.rank = killed;
  options.fault.point = point;
  options.fault.generation = 2;

  const int status = RunInChild([&] {
    if (!SaveAllRanks(root, 1, kWorld, options).ok()) _exit(3);
    (void)SaveAllRanks(root, 2, kWorld, options);
  });
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "child did not die by SIGKILL; wait status " << status;

  // What the dead process left: never a MANIFEST for generation 2; shards
  // that precede the kill point durable and whole.
  const fs::path gen2 = GenerationPath(root, 2);
  EXPECT_FALSE(fs::exists(gen2 / kManifestFileName));
  for (int rank = 0; rank < kWorld; ++rank) {
    const fs::path shard = gen2 / ShardFileName(rank);
    const std::string expected = TestShardBytes(2, rank);
    if (MustBeFinal(rank, point, killed)) {
      ASSERT_TRUE(fs::exists(shard)) << shard;
      EXPECT_EQ(*ReadFileToString(shard.string()), expected) << shard;
    } else {
      EXPECT_FALSE(fs::exists(shard)) << shard;
    }
  }
  ExpectTempFilesLeftAt(gen2, point, killed);

  absl::StatusOr<RecoveryDecision> decision = FindRestorable(root);
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->generation, 1);
  ASSERT_EQ(decision->skipped.size(), 1u);
  EXPECT_EQ(decision->skipped[0].reason,
            "gen-000002: no MANIFEST (partial save)");
  EXPECT_THAT(decision->partial_folders, ElementsAre("gen-000002"));
  for (int rank = 0; rank < kWorld; ++rank) {
    absl::StatusOr<std::string> bytes = ReadShardBytes(*decision, rank);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_TRUE(*bytes == TestShardBytes(1, rank)) << "rank " << rank;
  }

  absl::StatusOr<std::vector<std::string>> removed =
      CleanUpPartialGenerations(root);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_THAT(*removed, ElementsAre(gen2.string()));
  EXPECT_FALSE(fs::exists(gen2));
  EXPECT_TRUE(
      fs::exists(fs::path(GenerationPath(root, 1)) / kManifestFileName));

  // The restarted run saves generation 2 again; now it is the newest.
  ASSERT_TRUE(SaveAllRanks(root, 2, kWorld, {2, {}}).ok());
  decision = FindRestorable(root);
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->generation, 2);
  EXPECT_TRUE(decision->skipped.empty());
}

INSTANTIATE_TEST_SUITE_P(
    EveryPointOnEveryRank, KillPointTest,
    ::testing::Combine(::testing::ValuesIn(AllKillPoints()),
                       ::testing::Range(0, kWorld)),
    [](const auto& info) {
      return absl::StrCat(KillPointName(std::get<0>(info.param)), "_rank",
                          std::get<1>(info.param));
    });

TEST(SaveGenerationTest, ManifestRecordsEveryShardAndTheFields) {
  const std::string root = FreshTestDir("save_fields");
  ASSERT_TRUE(SaveAllRanks(root, 1, 3).ok());
  const std::string gen1 = GenerationPath(root, 1);
  absl::StatusOr<CheckpointManifest> manifest = ReadManifest(gen1, 1);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(manifest->format_version(), kManifestFormatVersion);
  EXPECT_EQ(manifest->generation(), 1);
  EXPECT_EQ(manifest->update(), 10);
  EXPECT_EQ(manifest->world_size(), 3);
  EXPECT_EQ(manifest->config_fingerprint(), "fingerprint-0123abcd");
  ASSERT_EQ(manifest->shards_size(), 3);
  for (int rank = 0; rank < 3; ++rank) {
    const ShardInfo& shard = manifest->shards(rank);
    EXPECT_EQ(shard.rank(), rank);
    EXPECT_EQ(shard.file(), ShardFileName(rank));
    EXPECT_EQ(shard.size_bytes(), TestShardBytes(1, rank).size());
    EXPECT_EQ(shard.checksum(), Crc32Checksum(TestShardBytes(1, rank)));
  }
  ASSERT_EQ(manifest->plugins_size(), 2);
  EXPECT_EQ(manifest->plugins(0).kind(), "reducer");  // sorted by kind
  // JSON keys are the proto field names; no temp file is left.
  const std::string json = *ReadFileToString(gen1 + "/MANIFEST");
  EXPECT_THAT(json, HasSubstr("\"epoch_cursor\""));
  EXPECT_THAT(json, HasSubstr("\"size_bytes\""));
  for (const auto& entry : fs::directory_iterator(gen1)) {
    EXPECT_FALSE(IsTempFileName(entry.path().filename().string()));
  }
}

// Rank 0's gather returns whatever the test hands it.
class FixedConfirmations : public ShardConfirmations {
 public:
  explicit FixedConfirmations(std::vector<ShardInfo> others)
      : others_(std::move(others)) {}
  absl::StatusOr<std::vector<ShardInfo>> GatherOnRankZero(
      const ShardInfo& mine) override {
    std::vector<ShardInfo> all = others_;
    all.push_back(mine);
    return all;
  }

 private:
  std::vector<ShardInfo> others_;
};

TEST(SaveGenerationTest, MissingConfirmationAdvertisesNothing) {
  const std::string root = FreshTestDir("save_missing_confirmation");
  FixedConfirmations only_rank0({});
  absl::Status status =
      SaveGeneration(root, 1, 0, "bytes", TestManifestFields(2, 1), only_rank0);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("1 shards for world size 2"));
  EXPECT_FALSE(fs::exists(GenerationPath(root, 1) + "/MANIFEST"));
}

// Rank 0 saves generation 1 of 2 ranks; rank 1's confirmation says its
// shard holds `claimed`.
absl::Status SaveWithRankOneClaiming(const std::string& root, const std::string& claimed) {
  ShardInfo claim;
  claim.set_rank(1);
  claim.set_file(ShardFileName(1));
  claim.set_size_bytes(static_cast<int64_t>(claimed.size()));
  claim.set_checksum(Crc32Checksum(claimed));
  FixedConfirmations confirmations({claim});
  return SaveGeneration(root, 1, 0, "bytes", TestManifestFields(2, 1), confirmations);
}

TEST(SaveGenerationTest, ConfirmedShardThatIsNotOnDiskAdvertisesNothing) {
  const std::string root = FreshTestDir("save_shard_not_on_disk");
  absl::Status status = SaveWithRankOneClaiming(root, "ghost");
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("shard-rank-00001.pt"));
  EXPECT_FALSE(fs::exists(GenerationPath(root, 1) + "/MANIFEST"));
}

TEST(SaveGenerationTest, AWrongConfirmationThroughTheStoreAdvertisesNothing) {
  // Rank 1's shard is on disk, and whoever wrote into the store claims
  // another checksum of the same size: rank 0 checks the file itself.
  const std::string root = FreshTestDir("save_wrong_confirmation");
  fs::create_directories(GenerationPath(root, 1));
  std::ofstream(fs::path(GenerationPath(root, 1)) / ShardFileName(1), std::ios::binary)
      << "right";
  absl::Status status = SaveWithRankOneClaiming(root, "wrong");
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(),
              HasSubstr("does not match its confirmation from rank 1"));
  EXPECT_THAT(status.message(), HasSubstr("checksum"));
  EXPECT_FALSE(fs::exists(GenerationPath(root, 1) + "/MANIFEST"));
}

TEST(SaveGenerationTest, RefusesBadArgumentsAndAnAdvertisedGeneration) {
  const std::string root = FreshTestDir("save_refusals");
  SingleRankConfirmations single;
  EXPECT_EQ(
      SaveGeneration(root, 1, 1, "x", TestManifestFields(1, 1), single).code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      SaveGeneration(root, 0, 0, "x", TestManifestFields(1, 1), single).code(),
      absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(
      SaveGeneration(root, 1, 0, "x", TestManifestFields(1, 1), single).ok());
  absl::Status again =
      SaveGeneration(root, 1, 0, "y", TestManifestFields(1, 1), single);
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.message(), HasSubstr("gen-000001"));
  EXPECT_EQ(*ReadShardBytes(*FindRestorable(root), 0), "x");
}

std::vector<int64_t> Generations(const std::string& root) {
  std::vector<int64_t> generations;
  const std::vector<GenerationFolder> folders = *ListGenerationFolders(root);
  for (const GenerationFolder& folder : folders) {
    generations.push_back(folder.generation);
  }
  return generations;
}

TEST(SaveGenerationTest, TimingsSayWhereRankZerosSaveWent) {
  const std::string root = FreshTestDir("save_timings");
  SingleRankConfirmations single;
  ASSERT_TRUE(SaveGeneration(root, 1, 0, TestShardBytes(1, 0), TestManifestFields(1, 10),
                             single, {1, {}})
                  .ok());
  SaveTimings timings;
  SaveOptions options{1, {}};
  options.timings = &timings;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(SaveGeneration(root, 2, 0, TestShardBytes(2, 0), TestManifestFields(1, 20),
                             single, options)
                  .ok());
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Every phase ran (generation 1 was pruned), and together they are the
  // save's time, no more.
  for (double phase : {timings.folder, timings.shard, timings.confirmations,
                       timings.verify, timings.manifest, timings.prune}) {
    EXPECT_GT(phase, 0);
  }
  EXPECT_LE(timings.folder + timings.shard + timings.confirmations + timings.verify +
                timings.manifest + timings.prune,
            wall);
  EXPECT_THAT(Generations(root), ElementsAre(2));
}

TEST(SaveGenerationTest, OtherRanksTimeOnlyTheirShardAndConfirmation) {
  const std::string root = FreshTestDir("save_timings_rank1");
  const std::string gen1 = GenerationPath(root, 1);
  fs::create_directories(gen1);
  FixedConfirmations confirmations({});
  SaveTimings timings;
  SaveOptions options;
  options.timings = &timings;
  ASSERT_TRUE(SaveGeneration(root, 1, 1, TestShardBytes(1, 1), TestManifestFields(2, 10),
                             confirmations, options)
                  .ok());
  EXPECT_GT(timings.shard, 0);
  EXPECT_EQ(timings.verify, 0);
  EXPECT_EQ(timings.manifest, 0);
  EXPECT_EQ(timings.prune, 0);
  // Its shard is whole under its final name; nothing is advertised.
  EXPECT_EQ(*ReadFileToString(gen1 + "/" + ShardFileName(1)), TestShardBytes(1, 1));
  EXPECT_FALSE(fs::exists(gen1 + "/MANIFEST"));
}

TEST(SaveGenerationTest, RetentionKeepsExactlyTheLastK) {
  const std::string root = FreshTestDir("save_retention");
  for (int64_t generation = 1; generation <= 5; ++generation) {
    ASSERT_TRUE(SaveAllRanks(root, generation, kWorld, {2, {}}).ok());
    EXPECT_EQ(Generations(root).size(), std::min<int64_t>(generation, 2));
  }
  EXPECT_THAT(Generations(root), ElementsAre(4, 5));

  const std::string all = FreshTestDir("save_retention_all");
  for (int64_t generation = 1; generation <= 3; ++generation) {
    ASSERT_TRUE(SaveAllRanks(all, generation, kWorld, {0, {}}).ok());
  }
  EXPECT_THAT(Generations(all), ElementsAre(1, 2, 3));
}

}  // namespace
}  // namespace receipt_parity
