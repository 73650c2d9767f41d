// Loads the example shared-library plugin into this statically linked,
// -rdynamic host (as the trainer does) and selects it through a
// PluginSelection whose Any options hold its own options message, parsed
// from text after loading, as a config file would be.
#include "plugins/plugin_library.h"

#include <dlfcn.h>

#include <filesystem>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "metrics/metric_dedup.h"
#include "plugins/plugin_registry.h"
#include "plugins/plugin_selection.h"

namespace receipt_parity {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsSupersetOf;

std::string KeepFirstSeenPath() {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/",
                      std::getenv("TEST_WORKSPACE"),
                      "/examples/plugins/libkeep_first_seen_dedup.so");
}

// The first load of the example library in this process, whichever test
// asks first.
const absl::StatusOr<std::vector<std::string>>& FirstLoad() {
  static const auto* first = new absl::StatusOr<std::vector<std::string>>(
      LoadPluginLibrary(KeepFirstSeenPath()));
  return *first;
}

// `options_text`: the body of a KeepFirstSeenOptions in text format, or
// nullptr for no options at all.
absl::StatusOr<std::unique_ptr<MetricDedup>> SelectKeepFirstSeen(
    const char* options_text) {
  std::string text = "name: 'keep_first_seen'";
  if (options_text != nullptr) {
    absl::StrAppend(&text,
                    " options { "
                    "[type.googleapis.com/receipt_parity.KeepFirstSeenOptions] "
                    "{ ",
                    options_text, " } }");
  }
  PluginSelection selection;
  if (!google::protobuf::TextFormat::ParseFromString(text, &selection)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot parse: ", text));
  }
  return CreateSelectedPlugin<MetricDedup>(selection, "metric_dedup");
}

// "r0" twice (agreeing), "r1" and "r2" twice each with disagreeing copies;
// the first of each in (rank, slot) order is on rank 0.
std::vector<Prediction> Gathered() {
  return {{"r2", 1, 1, 1, 0}, {"r0", 0, 0, 1, 1}, {"r1", 3, 2, 0, 1},
          {"r1", 2, 2, 1, 2}, {"r0", 0, 0, 0, 0}, {"r2", 1, 0, 0, 2}};
}

TEST(PluginLibraryTest, LoadingRegistersKeepFirstSeenIntoTheHostRegistry) {
  ASSERT_TRUE(FirstLoad().ok()) << FirstLoad().status();
  EXPECT_THAT(*FirstLoad(), ElementsAre("metric_dedup/keep_first_seen"));
  EXPECT_THAT(RegisteredNames(MetricDedup::kKind),
              IsSupersetOf({"keep_first_seen", "none"}));
  EXPECT_TRUE(CheckRegistries().ok()) << CheckRegistries();
}

TEST(PluginLibraryTest, LibraryCarriesNoRegistryOfItsOwn) {
  ASSERT_TRUE(FirstLoad().ok()) << FirstLoad().status();
  // plugin_registry_internal::Add(const char*, FactoryBase*)
  const char* kAdd =
      "_ZN14receipt_parity24plugin_registry_internal3AddEPKcPNS_11FactoryBaseE";
  // The host exports it (-rdynamic)...
  EXPECT_NE(dlsym(RTLD_DEFAULT, kAdd), nullptr);
  // ...and the library (with its own dependencies) does not define it.
  void* handle = dlopen(KeepFirstSeenPath().c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr) << dlerror();
  EXPECT_EQ(dlsym(handle, kAdd), nullptr);
  dlclose(handle);  // drops only the reference RTLD_NOLOAD took
}

TEST(PluginLibraryTest, SelectedWithItsOwnOptionsItKeepsTheFirstSeen) {
  ASSERT_TRUE(FirstLoad().ok()) << FirstLoad().status();
  auto dedup = SelectKeepFirstSeen("max_disagreeing_ids: 2");
  ASSERT_TRUE(dedup.ok()) << dedup.status();
  absl::StatusOr<DedupResult> result = (*dedup)->Dedup(Gathered());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->duplicates_dropped, 3);
  ASSERT_EQ(result->counted.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(result->counted[i].receipt_id, absl::StrCat("r", i));
    EXPECT_EQ(result->counted[i].rank, 0) << "r" << i;
  }
  EXPECT_EQ(result->counted[1].predicted, 3);  // rank 0's copy of r1
  EXPECT_EQ(result->counted[2].label, 0);      // rank 0's copy of r2
}

TEST(PluginLibraryTest, OptionsLimitTheDisagreementsTolerated) {
  ASSERT_TRUE(FirstLoad().ok()) << FirstLoad().status();
  auto strict = SelectKeepFirstSeen("max_disagreeing_ids: 1");
  ASSERT_TRUE(strict.ok()) << strict.status();
  absl::StatusOr<DedupResult> result = (*strict)->Dedup(Gathered());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status().message(),
              AllOf(HasSubstr("keep_first_seen: 2 receipt ids"),
                    HasSubstr("max_disagreeing_ids = 1"),
                    HasSubstr("receipt 'r1': rank 0 slot 1"),
                    HasSubstr("receipt 'r2': rank 0 slot 2")));

  // No options: defaults, no limit.
  auto lenient = SelectKeepFirstSeen(nullptr);
  ASSERT_TRUE(lenient.ok()) << lenient.status();
  EXPECT_TRUE((*lenient)->Dedup(Gathered()).ok());
}

TEST(PluginLibraryTest, InvalidOptionValueNamesTheField) {
  ASSERT_TRUE(FirstLoad().ok()) << FirstLoad().status();
  auto dedup = SelectKeepFirstSeen("max_disagreeing_ids: -1");
  EXPECT_EQ(dedup.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dedup.status().message(),
              HasSubstr("metric_dedup.options: max_disagreeing_ids: -1"));
}

// A process that checks several configs naming one library (the study)
// loads it once: a second load, by the same path or another path to the
// same file, answers what the first registered.
TEST(PluginLibraryTest, LoadingTheSameLibraryTwiceAnswersWhatItRegistered) {
  ASSERT_TRUE(FirstLoad().ok()) << FirstLoad().status();
  auto again = LoadPluginLibrary(KeepFirstSeenPath());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_THAT(*again, ElementsAre("metric_dedup/keep_first_seen"));
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/same_library";
  std::filesystem::create_directories(dir);
  const std::string link = dir + "/link.so";
  std::filesystem::remove(link);
  std::filesystem::create_symlink(KeepFirstSeenPath(), link);
  auto linked = LoadPluginLibrary(dir + "/../same_library/link.so");
  ASSERT_TRUE(linked.ok()) << linked.status();
  EXPECT_THAT(*linked, ElementsAre("metric_dedup/keep_first_seen"));
  EXPECT_TRUE(CheckRegistries().ok()) << CheckRegistries();
}

TEST(PluginLibraryTest, MissingPathIsNotFound) {
  const std::string path =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/no_such_plugin.so");
  auto loaded = LoadPluginLibrary(path);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(loaded.status().message(), HasSubstr(path));
}

TEST(PluginLibraryTest, FileThatIsNotASharedLibraryIsFailedPrecondition) {
  const std::string path =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/not_a_library.so");
  std::ofstream(path) << "this is a text file, not an ELF shared object\n";
  auto loaded = LoadPluginLibrary(path);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(loaded.status().message(),
              AllOf(HasSubstr(path), HasSubstr("cannot load")));
}

}  // namespace
}  // namespace receipt_parity
