// A shared library that registers a name the host already has (`none`,
// linked in from //metrics:none_registration) must fail loudly.
//
// A separate test binary: after a duplicate, CheckRegistries() fails for the
// rest of the process, so every later LoadPluginLibrary would fail too.
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/metric_dedup.h"
#include "plugins/plugin_library.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(PluginLibraryDuplicateTest, RegisteringAnExistingNameIsAlreadyExists) {
  ASSERT_TRUE(CheckRegistries().ok()) << CheckRegistries();
  const std::string path = absl::StrCat(
      std::getenv("TEST_SRCDIR"), "/", std::getenv("TEST_WORKSPACE"),
      "/examples/plugins/libduplicate_none_dedup.so");
  auto loaded = LoadPluginLibrary(path);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(loaded.status().message(),
              AllOf(HasSubstr(path), HasSubstr("metric_dedup 'none'")));

  // The built-in keeps answering for the name.
  auto factory = FindFactory<MetricDedup>("none");
  ASSERT_TRUE(factory.ok()) << factory.status();
  EXPECT_EQ((*factory)->CreateEmptyOptions()->GetDescriptor()->full_name(),
            "receipt_parity.NoneDedupOptions");
}

}  // namespace
}  // namespace receipt_parity
