#include "io/untrusted_file.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Fresh(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

UntrustedFileRules Exactly(int64_t bytes, const std::string& within = "") {
  UntrustedFileRules rules;
  rules.exact_bytes = bytes;
  rules.within = within;
  return rules;
}

TEST(ReadUntrustedFileTest, ReadsARegularFileOfTheExpectedSize) {
  const std::string dir = Fresh("regular");
  Write(dir + "/f", "twelve bytes");
  absl::StatusOr<std::string> bytes = ReadUntrustedFile(dir + "/f", Exactly(12, dir));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, "twelve bytes");
  UntrustedFileRules bounded;
  bounded.max_bytes = 12;
  EXPECT_TRUE(ReadUntrustedFile(dir + "/f", bounded).ok());
}

TEST(ReadUntrustedFileTest, ASparseHugeFileIsRefusedBySizeBeforeAnythingIsAllocated) {
  const std::string dir = Fresh("sparse");
  const std::string path = dir + "/shard";
  Write(path, "");
  fs::resize_file(path, uintmax_t{64} << 30);  // 64 GiB, no blocks
  absl::StatusOr<std::string> bytes = ReadUntrustedFile(path, Exactly(100));
  EXPECT_TRUE(absl::IsDataLoss(bytes.status())) << bytes.status();
  EXPECT_THAT(bytes.status().message(), HasSubstr("size 68719476736 != expected 100"));
  UntrustedFileRules bounded;
  bounded.max_bytes = 1 << 20;
  EXPECT_THAT(ReadUntrustedFile(path, bounded).status().message(),
              HasSubstr("is over the bound of 1048576 bytes"));
}

TEST(ReadUntrustedFileTest, AFifoADeviceAndAFolderAreRefusedWithoutOpeningThem) {
  const std::string dir = Fresh("kinds");
  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0600), 0);
  fs::create_symlink("/dev/zero", dir + "/zero");
  fs::create_directory(dir + "/folder");
  for (const auto& [name, kind] : {std::pair<std::string, std::string>{"fifo", "a FIFO"},
                                   {"zero", "a character device"},
                                   {"folder", "a folder"}}) {
    absl::StatusOr<std::string> bytes = ReadUntrustedFile(dir + "/" + name, Exactly(10));
    EXPECT_TRUE(absl::IsFailedPrecondition(bytes.status())) << name << bytes.status();
    EXPECT_THAT(bytes.status().message(), HasSubstr(" is " + kind + ", not a regular file"));
  }
  EXPECT_TRUE(absl::IsNotFound(ReadUntrustedFile(dir + "/missing", Exactly(1)).status()));
}

TEST(ReadUntrustedFileTest, ALinkLeavingTheFolderIsRefusedAndOneInsideIsRead) {
  const std::string run = Fresh("run");
  const std::string elsewhere = Fresh("elsewhere");
  Write(elsewhere + "/shard", "abc");
  Write(run + "/own", "abc");
  fs::create_symlink(elsewhere + "/shard", run + "/outside");
  fs::create_symlink(run + "/own", run + "/inside");
  absl::StatusOr<std::string> out = ReadUntrustedFile(run + "/outside", Exactly(3, run));
  EXPECT_TRUE(absl::IsFailedPrecondition(out.status())) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("a link leading out of " + run));
  EXPECT_TRUE(ReadUntrustedFile(run + "/inside", Exactly(3, run)).ok());
  EXPECT_FALSE(ResolvesInside(run + "/outside", run));
  EXPECT_TRUE(ResolvesInside(run + "/inside", run));
  // A sibling whose name starts like the folder's is not inside it.
  const std::string sibling = Fresh("run2");
  Write(sibling + "/f", "x");
  EXPECT_FALSE(ResolvesInside(sibling + "/f", run));
}

}  // namespace
}  // namespace receipt_parity
