#include "checkpoint/background_prune.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "checkpoint/generation_layout.h"
#include "checkpoint/in_process_save.h"
#include "checkpoint/save_generation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<int64_t> Advertised(const std::string& root) {
  std::vector<int64_t> generations;
  const absl::StatusOr<std::vector<GenerationFolder>> folders = ListGenerationFolders(root);
  EXPECT_TRUE(folders.ok()) << folders.status();
  if (!folders.ok()) return generations;
  for (const GenerationFolder& folder : *folders) {
    if (folder.has_manifest) generations.push_back(folder.generation);
  }
  return generations;
}

TEST(BackgroundPrunerTest, KeepsTheLastKOnceWaitedFor) {
  const std::string root = FreshTestDir("background_prune");
  BackgroundPruner pruner(root, 2);
  for (int64_t generation = 1; generation <= 5; ++generation) {
    // As a run saves: the previous prune is done before a folder is made.
    ASSERT_TRUE(pruner.Wait().ok());
    ASSERT_TRUE(SaveAllRanks(root, generation, 2).ok());  // keep_last 0: no inline prune
    ASSERT_TRUE(pruner.Start(generation).ok());
  }
  ASSERT_TRUE(pruner.Wait().ok());
  EXPECT_THAT(Advertised(root), ElementsAre(4, 5));
  // Nothing is left of the deleted ones.
  EXPECT_FALSE(fs::exists(GenerationPath(root, 3)));
}

TEST(BackgroundPrunerTest, AnErrorIsReportedOnceByTheNextWaitOrStart) {
  const std::string root = FreshTestDir("background_prune_error");
  // A file where the root folder should be: listing it fails.
  const std::string not_a_folder = root + "/file";
  { std::ofstream(not_a_folder) << "x"; }
  BackgroundPruner pruner(not_a_folder, 1);
  ASSERT_TRUE(pruner.Start(3).ok());
  const absl::Status first = pruner.Start(4);  // waits for the failed one
  EXPECT_FALSE(first.ok());
  EXPECT_THAT(std::string(first.message()), HasSubstr(not_a_folder));
  EXPECT_TRUE(pruner.Wait().ok());  // reported once; the second never started
}

TEST(BackgroundPrunerTest, TheDestructorWaitsForThePruneInFlight) {
  const std::string root = FreshTestDir("background_prune_destructor");
  for (int64_t generation = 1; generation <= 3; ++generation) {
    ASSERT_TRUE(SaveAllRanks(root, generation, 1).ok());
  }
  {
    BackgroundPruner pruner(root, 1);
    ASSERT_TRUE(pruner.Start(3).ok());
  }
  EXPECT_THAT(Advertised(root), ElementsAre(3));
}

}  // namespace
}  // namespace receipt_parity
