#include "drill/generation_audit.h"

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "checkpoint/generation_layout.h"
#include "checkpoint/in_process_save.h"
#include "checkpoint/save_generation.h"
#include "checkpoint/shard_state.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

// A one-rank generation whose shard is a real ShardState with cursor
// `cursor` and whose MANIFEST says `update`.
void Save(const std::string& root, int64_t generation, int64_t update, int64_t cursor) {
  ShardState state;
  state.owned_tensors["model/w"] = at::arange(6, at::kFloat);
  state.scalars["total_updates"] = cursor;
  absl::StatusOr<std::string> bytes = SerializeShardState(state);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  SingleRankConfirmations single;
  ASSERT_TRUE(SaveGeneration(root, generation, 0, *bytes, TestManifestFields(1, update),
                             single, SaveOptions())
                  .ok());
}

TEST(GenerationAuditTest, EveryAdvertisedGenerationIsCheckedAsARestartWouldRestoreIt) {
  const std::string root = FreshTestDir("audit_restores");
  Save(root, 1, 2, 2);
  Save(root, 2, 4, 4);
  std::filesystem::create_directories(GenerationPath(root, 3));  // a partial save
  absl::StatusOr<std::vector<AdvertisedGeneration>> checked = CheckAdvertisedGenerations(root);
  ASSERT_TRUE(checked.ok()) << checked.status();
  ASSERT_THAT(*checked, SizeIs(2));
  EXPECT_EQ((*checked)[1].generation, 2);
  EXPECT_EQ((*checked)[1].update, 4);
  EXPECT_TRUE((*checked)[0].restores && (*checked)[1].restores);
  EXPECT_EQ((*checked)[1].line,
            "gen-000002 (update 4): MANIFEST and 1 shard(s) verify and deserialise");
}

TEST(GenerationAuditTest, ACorruptShardOrAWrongCursorDoesNotRestore) {
  const std::string root = FreshTestDir("audit_fails");
  Save(root, 1, 2, 2);
  Save(root, 2, 4, 3);  // the shard's cursor is not the MANIFEST's update
  Save(root, 3, 6, 6);
  {
    std::fstream shard(GenerationPath(root, 3) + "/" + ShardFileName(0),
                       std::ios::in | std::ios::out | std::ios::binary);
    shard.seekp(40);
    shard.put('\x7f');
  }
  absl::StatusOr<std::vector<AdvertisedGeneration>> checked = CheckAdvertisedGenerations(root);
  ASSERT_TRUE(checked.ok()) << checked.status();
  ASSERT_THAT(*checked, SizeIs(3));
  EXPECT_TRUE((*checked)[0].restores);
  EXPECT_FALSE((*checked)[1].restores);
  EXPECT_THAT((*checked)[1].line,
              HasSubstr("its cursor is not the MANIFEST's update 4 (3)"));
  EXPECT_FALSE((*checked)[2].restores);
  EXPECT_THAT((*checked)[2].line, HasSubstr("gen-000003 (update 6): "));
  EXPECT_THAT((*checked)[2].line, HasSubstr("shard-rank-00000.pt"));
}

TEST(GenerationAuditTest, AMissingRootHasNoGeneration) {
  absl::StatusOr<std::vector<AdvertisedGeneration>> checked =
      CheckAdvertisedGenerations(FreshTestDir("audit_missing") + "/nothing");
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_TRUE(checked->empty());
}

}  // namespace
}  // namespace receipt_parity
