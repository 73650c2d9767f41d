#include "io/atomic_file.h"

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

std::string TestDir() {
  fs::path dir = fs::path(::testing::TempDir()) / "atomic_file_test";
  fs::create_directories(dir);
  return dir.string();
}

TEST(AtomicFileTest, WritesAndReplacesWholeFiles) {
  const std::string path = TestDir() + "/a.txt";
  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  EXPECT_EQ(*ReadFileToString(path), "first");
  ASSERT_TRUE(WriteFileAtomically(path, "second, longer").ok());
  EXPECT_EQ(*ReadFileToString(path), "second, longer");
  // No temporary file is left behind.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(TestDir())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

TEST(AtomicFileTest, FailureLeavesTheOldFileAndNamesThePath) {
  const std::string path = TestDir() + "/missing-folder/b.txt";
  absl::Status status = WriteFileAtomically(path, "x");
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), ::testing::HasSubstr("missing-folder"));
}

TEST(AtomicFileTest, ReadingAMissingFileIsNotFound) {
  auto contents = ReadFileToString(TestDir() + "/nope");
  EXPECT_EQ(contents.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace receipt_parity
