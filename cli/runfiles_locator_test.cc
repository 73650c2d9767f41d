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

TEST(RunfilesLocatorTest, LocatesAFolderOfTheRunfilesTree) {
  absl::StatusOr<RunfilesLocator> locator = RunfilesLocator::Create(g_argv0);
  ASSERT_TRUE(locator.ok()) << locator.status();
  absl::StatusOr<std::string> configs = locator->LocateFolder("configs");
  ASSERT_TRUE(configs.ok()) << configs.status();
  EXPECT_TRUE(fs::path(*configs).is_absolute()) << *configs;
  EXPECT_TRUE(fs::is_regular_file(fs::path(*configs) / "one_worker.pbtxt")) << *configs;
  absl::StatusOr<std::string> missing = locator->LocateFolder("no_such_folder");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("the runfiles have no folder no_such_folder"));
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

TEST(RunfilesLocatorTest, AnswersStayValidAfterTheDirectoryChanges) {
  // A binary locates first, then changes to the caller's directory.
  const fs::path saved = fs::current_path();
  absl::StatusOr<RunfilesLocator> locator = RunfilesLocator::Create(g_argv0);
  ASSERT_TRUE(locator.ok()) << locator.status();
  fs::current_path("/");
  const std::string config = locator->Locate("configs/one_worker.pbtxt");
  fs::current_path(saved);
  EXPECT_TRUE(fs::path(config).is_absolute()) << config;
  EXPECT_TRUE(fs::is_regular_file(config)) << config;
}

TEST(RunfilesLocatorTest, ExportsTheRunfilesForTheProgramsItStarts) {
  // The test's own runfiles folder, <program>.runfiles, found from the
  // program's path alone (the environment cleared, as under `bazel run`).
  const std::string runfiles_dir = getenv("TEST_SRCDIR");
  ASSERT_THAT(runfiles_dir, EndsWith(".runfiles"));
  const std::string program =
      runfiles_dir.substr(0, runfiles_dir.size() - std::string(".runfiles").size());
  unsetenv("RUNFILES_DIR");
  unsetenv("RUNFILES_MANIFEST_FILE");
  absl::StatusOr<RunfilesLocator> locator =
      RunfilesLocator::Create(program.c_str());
  ASSERT_TRUE(locator.ok()) << locator.status();
  ASSERT_NE(getenv("RUNFILES_DIR"), nullptr);
  EXPECT_EQ(fs::path(getenv("RUNFILES_DIR")), fs::path(runfiles_dir));
  // A sibling started from these runfiles has no <argv0>.runfiles of its
  // own: it finds them through the inherited environment.
  absl::StatusOr<RunfilesLocator> sibling =
      RunfilesLocator::Create("/nonexistent/bin/sibling");
  ASSERT_TRUE(sibling.ok()) << sibling.status();
  EXPECT_EQ(sibling->Locate("configs/one_worker.pbtxt"),
            locator->Locate("configs/one_worker.pbtxt"));
  EXPECT_TRUE(fs::is_regular_file(sibling->Locate("configs/one_worker.pbtxt")));
}

}  // namespace
}  // namespace receipt_parity

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  receipt_parity::g_argv0 = argv[0];
  return RUN_ALL_TESTS();
}
