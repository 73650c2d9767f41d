#include "config/config_paths.h"

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

TEST(ConfigPathsTest, AnAbsolutePathStaysAsWritten) {
  EXPECT_EQ(ResolveConfigPath("/a/b/c.pbtxt", "/data/./receipts.csv"),
            "/data/./receipts.csv");
  EXPECT_EQ(ResolveConfigPath("c.pbtxt", "/data/receipts.csv"),
            "/data/receipts.csv");
}

TEST(ConfigPathsTest, ARelativePathIsRelativeToTheConfigsFolder) {
  EXPECT_EQ(ResolveConfigPath("/a/mydata/c.pbtxt", "receipts.csv"),
            "/a/mydata/receipts.csv");
  EXPECT_EQ(ResolveConfigPath("/a/mydata/c.pbtxt", "./sub/../r.csv"),
            "/a/mydata/r.csv");
  EXPECT_EQ(ResolveConfigPath("/a/mydata/c.pbtxt", "../lib/libx.so"),
            "/a/lib/libx.so");
}

TEST(ConfigPathsTest, ARelativeConfigIsFoundFromTheWorkingDirectory) {
  const fs::path cwd = fs::current_path();
  EXPECT_EQ(ResolveConfigPath("mydata/c.pbtxt", "receipts.csv"),
            (cwd / "mydata" / "receipts.csv").string());
  EXPECT_EQ(ResolveConfigPath("c.pbtxt", "receipts.csv"),
            (cwd / "receipts.csv").string());
}

TEST(ConfigPathsTest, OnlyTheManifestPathOfTheDataIsResolved) {
  DataConfig manifest;
  manifest.set_manifest_path("receipts.csv");
  manifest.set_image_size(16);
  const DataConfig resolved = ResolveDataPaths("/a/mydata/c.pbtxt", manifest);
  EXPECT_EQ(resolved.manifest_path(), "/a/mydata/receipts.csv");
  EXPECT_EQ(resolved.image_size(), 16);

  DataConfig synthetic;
  synthetic.mutable_synthetic()->set_num_identities(5);
  EXPECT_EQ(ResolveDataPaths("/a/c.pbtxt", synthetic).SerializeAsString(),
            synthetic.SerializeAsString());

  DataConfig empty;
  empty.set_manifest_path("");  // refused by the data checks, left as is
  EXPECT_EQ(ResolveDataPaths("/a/c.pbtxt", empty).manifest_path(), "");
}

}  // namespace
}  // namespace receipt_parity
