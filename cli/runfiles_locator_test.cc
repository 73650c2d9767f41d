#include "cli/runfiles_locator.h"

#include <stdlib.h>

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
using ::testing::EndsWith;
using ::testing::HasSubstr;

const char* g_argv0 = nullptr;

TEST(RunfilesLocatorTest, FindsDataInTheRunfiles) {
  absl::StatusOr<RunfilesLocator> locator = RunfilesLocator::Create(g_argv0);
  ASSERT_TRUE(locator.ok()) << locator.status();
  const std::string config = locator->Locate("configs/one_worker.pbtxt");
  EXPECT_TRUE(fs::path(config).is_absolute()) << config;
  EXPECT_THAT(config, EndsWith("configs/one_worker.pbtxt"));
  EXPECT_TRUE(fs::is_regular_file(config)) << config;
  // A path outside the data is still given, for the caller to report.
  EXPECT_THAT(locator->Locate("trainer/no_such_program"),
              EndsWith("trainer/no_such_program"));
}

TEST(RunfilesLocatorTest, ABinaryWithoutRunfilesIsNotFound) {
  // Neither the environment nor a <argv0>.runfiles folder can say where.
  const std::string saved_dir = getenv("RUNFILES_DIR") ? getenv("RUNFILES_DIR") : "";
  const std::string saved_manifest =
      getenv("RUNFILES_MANIFEST_FILE") ? getenv("RUNFILES_MANIFEST_FILE") : "";
  const std::string saved_test_srcdir =
      getenv("TEST_SRCDIR") ? getenv("TEST_SRCDIR") : "";
  unsetenv("RUNFILES_DIR");
  unsetenv("RUNFILES_MANIFEST_FILE");
  unsetenv("TEST_SRCDIR");
  absl::StatusOr<RunfilesLocator> locator =
      RunfilesLocator::Create("/nonexistent/bin/study");
  if (!saved_dir.empty()) setenv("RUNFILES_DIR", saved_dir.c_str(), 1);
  if (!saved_manifest.empty()) {
    setenv("RUNFILES_MANIFEST_FILE", saved_manifest.c_str(), 1);
  }
  if (!saved_test_srcdir.empty()) {
    setenv("TEST_SRCDIR", saved_test_srcdir.c_str(), 1);
  }
  EXPECT_EQ(locator.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(locator.status().message(), HasSubstr("/nonexistent/bin/study"));
}

TEST(UserPathTest, RelativePathsAreTheUsers) {
  setenv("BUILD_WORKING_DIRECTORY", "/home/someone/project", 1);
  EXPECT_EQ(UserPath("out/study"), "/home/someone/project/out/study");
  EXPECT_EQ(UserPath("./out/../out/study/"), "/home/someone/project/out/study/");
  EXPECT_EQ(UserPath("/abs/./out"), "/abs/out");
  unsetenv("BUILD_WORKING_DIRECTORY");
  EXPECT_EQ(UserPath("out"), (fs::current_path() / "out").string());
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  receipt_parity::g_argv0 = argv[0];
  return RUN_ALL_TESTS();
}
