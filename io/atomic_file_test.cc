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

TEST(AtomicFileTest, StagesUnderATempNameThatIsRecognised) {
  const std::string path = TestDir() + "/staged.txt";
  std::string staged_at;
  bool staged_existed = false;
  WriteHooks hooks;
  hooks.before_rename = [&] {
    staged_at = TempPathFor(path);
    staged_existed = fs::exists(staged_at) && !fs::exists(path);
  };
  ASSERT_TRUE(WriteFileAtomically(path, "staged", hooks).ok());
  EXPECT_TRUE(staged_existed);
  EXPECT_FALSE(fs::exists(staged_at));
  EXPECT_TRUE(IsTempFileName(fs::path(staged_at).filename().string()));
  EXPECT_FALSE(IsTempFileName("shard-rank-00000.pt"));
  EXPECT_EQ(*ReadFileToString(path), "staged");
}

TEST(AtomicFileTest, HalfwayHookSeesHalfTheBytesInTheTempFile) {
  const std::string path = TestDir() + "/half.txt";
  std::string seen;
  WriteHooks hooks;
  hooks.after_half = [&] { seen = *ReadFileToString(TempPathFor(path)); };
  ASSERT_TRUE(WriteFileAtomically(path, "0123456789", hooks).ok());
  EXPECT_EQ(seen, "01234");
}

TEST(AtomicFileTest, LeavingTheFolderToTheCallerStillRenamesTheWholeFile) {
  const std::string path = TestDir() + "/unsynced_folder.txt";
  WriteHooks hooks;
  hooks.sync_folder = false;
  bool before_rename = false;
  hooks.before_rename = [&] {
    before_rename = true;
    EXPECT_EQ(*ReadFileToString(TempPathFor(path)), "0123456789");
  };
  ASSERT_TRUE(WriteFileAtomically(path, "0123456789", hooks).ok());
  EXPECT_TRUE(before_rename);
  EXPECT_EQ(*ReadFileToString(path), "0123456789");
  EXPECT_FALSE(std::filesystem::exists(TempPathFor(path)));
  ASSERT_TRUE(SyncDirectory(TestDir()).ok());
}

TEST(AtomicFileTest, PiecesGoToTheTempFileAsTheyComeAndAreRenamedWhole) {
  const std::string path = TestDir() + "/pieces.txt";
  std::string staged_while_producing;
  ASSERT_TRUE(WriteFileAtomicallyFrom(path, [&](const ByteSink& sink) {
                if (absl::Status s = sink("first "); !s.ok()) return s;
                staged_while_producing = *ReadFileToString(TempPathFor(path));
                return sink("second");
              }).ok());
  EXPECT_EQ(staged_while_producing, "first ");
  EXPECT_EQ(*ReadFileToString(path), "first second");
  EXPECT_FALSE(fs::exists(TempPathFor(path)));
}

TEST(AtomicFileTest, AProducerErrorLeavesTheOldFileAndNoTempFile) {
  const std::string path = TestDir() + "/kept.txt";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  const absl::Status status =
      WriteFileAtomicallyFrom(path, [](const ByteSink& sink) {
        if (absl::Status s = sink("half of the new"); !s.ok()) return s;
        return absl::DataLossError("the producer failed");
      });
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(*ReadFileToString(path), "old");
  EXPECT_FALSE(fs::exists(TempPathFor(path)));
}

TEST(AtomicFileTest, ReadsEmptyAndBinaryFilesWhole) {
  const std::string empty = TestDir() + "/empty";
  ASSERT_TRUE(WriteFileAtomically(empty, "").ok());
  EXPECT_EQ(*ReadFileToString(empty), "");
  std::string bytes(3 * 1024 * 1024 + 7, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 31);
  const std::string binary = TestDir() + "/binary";
  ASSERT_TRUE(WriteFileAtomically(binary, bytes).ok());
  EXPECT_EQ(*ReadFileToString(binary), bytes);
}

TEST(AtomicFileTest, ReadsFilesThatReportNoSize) {
  absl::StatusOr<std::string> status = ReadFileToString("/proc/self/status");
  ASSERT_TRUE(status.ok());
  EXPECT_THAT(*status, ::testing::HasSubstr("VmRSS"));
}

TEST(AtomicFileTest, ReadingAFolderIsAnError) {
  EXPECT_FALSE(ReadFileToString(TestDir()).ok());
}

TEST(AtomicFileTest, ReadingAMissingFileIsNotFound) {
  auto contents = ReadFileToString(TestDir() + "/nope");
  EXPECT_EQ(contents.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace receipt_parity
