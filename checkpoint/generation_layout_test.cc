#include "checkpoint/generation_layout.h"

#include <filesystem>
#include <fstream>

#include "io/checksum.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

TEST(GenerationLayoutTest, NamesHaveTheFixedFormat) {
  EXPECT_EQ(GenerationFolderName(1), "gen-000001");
  EXPECT_EQ(GenerationFolderName(123456), "gen-123456");
  EXPECT_EQ(ShardFileName(1), "shard-rank-00001.pt");
  EXPECT_EQ(ParseGenerationFolderName("gen-000042"), 42);
  EXPECT_EQ(ParseGenerationFolderName("gen-42"), std::nullopt);
  EXPECT_EQ(ParseGenerationFolderName("gen-00004x"), std::nullopt);
  EXPECT_EQ(ParseGenerationFolderName("gen-000000"), std::nullopt);
  EXPECT_EQ(ParseGenerationFolderName("gen-0000001"), std::nullopt);
}

TEST(GenerationLayoutTest, ListsOnlyGenerationFoldersInOrder) {
  const fs::path root = fs::path(::testing::TempDir()) / "layout_list";
  fs::remove_all(root);
  EXPECT_TRUE(ListGenerationFolders(root.string())->empty());
  EXPECT_EQ(*NextGeneration(root.string()), 1);
  fs::create_directories(root / "gen-000010");
  fs::create_directories(root / "gen-000002");
  fs::create_directories(root / "not-a-generation");
  std::ofstream(root / "gen-000003");  // a file, not a folder
  std::ofstream(root / "gen-000002" / kManifestFileName) << "{}";
  auto folders = ListGenerationFolders(root.string());
  ASSERT_TRUE(folders.ok()) << folders.status();
  ASSERT_EQ(folders->size(), 2u);
  EXPECT_EQ((*folders)[0].generation, 2);
  EXPECT_TRUE((*folders)[0].has_manifest);
  EXPECT_EQ((*folders)[1].generation, 10);
  EXPECT_FALSE((*folders)[1].has_manifest);
  EXPECT_EQ(*NextGeneration(root.string()), 11);
}

TEST(ChecksumTest, IsZlibCrc32WithItsName) {
  // The standard CRC-32 check value of "123456789".
  EXPECT_EQ(Crc32Checksum("123456789"), "crc32:cbf43926");
  EXPECT_EQ(Crc32Checksum(""), "crc32:00000000");
}

}  // namespace
}  // namespace receipt_parity
