// The built-in dedup plugins as the trainer gets them: registered by their
// alwayslink targets in a statically linked binary, created from a config's
// PluginSelection with their own typed options.
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/metric_dedup.h"
#include "metrics/metric_dedup_options.pb.h"
#include "plugins/plugin_registry.h"
#include "plugins/plugin_selection.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;
using ::testing::IsSupersetOf;

// Two copies of "r0" that disagree, and "r1".
std::vector<Prediction> DisagreeingGather() {
  return {{"r0", 1, 1, 0, 0}, {"r0", 2, 1, 1, 0}, {"r1", 0, 0, 0, 1}};
}

template <typename Options>
absl::StatusOr<std::unique_ptr<MetricDedup>> Select(const std::string& name) {
  PluginSelection selection;
  selection.set_name(name);
  selection.mutable_options()->PackFrom(Options());
  return CreateSelectedPlugin<MetricDedup>(selection, "metric_dedup");
}

TEST(MetricDedupRegistrationTest, BothBuiltInsAreRegistered) {
  ASSERT_TRUE(CheckRegistries().ok()) << CheckRegistries();
  EXPECT_THAT(RegisteredNames(MetricDedup::kKind),
              IsSupersetOf({"by_receipt_id", "none"}));
}

TEST(MetricDedupRegistrationTest, ByReceiptIdFromItsTypedOptions) {
  auto dedup = Select<ByReceiptIdOptions>("by_receipt_id");
  ASSERT_TRUE(dedup.ok()) << dedup.status();
  absl::StatusOr<DedupResult> result = (*dedup)->Dedup(DisagreeingGather());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status().message(), HasSubstr("receipt 'r0'"));
}

TEST(MetricDedupRegistrationTest, NoneFromItsTypedOptions) {
  auto dedup = Select<NoneDedupOptions>("none");
  ASSERT_TRUE(dedup.ok()) << dedup.status();
  absl::StatusOr<DedupResult> result = (*dedup)->Dedup(DisagreeingGather());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->counted.size(), 3u);
}

TEST(MetricDedupRegistrationTest, OptionsOfAnotherPluginAreRefused) {
  auto dedup = Select<ByReceiptIdOptions>("none");
  EXPECT_EQ(dedup.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dedup.status().message(),
              HasSubstr("metric_dedup.options: plugin 'none' takes options of "
                        "type receipt_parity.NoneDedupOptions"));
}

TEST(MetricDedupRegistrationTest, UnknownNameListsTheDedupPlugins) {
  PluginSelection selection;
  selection.set_name("by_image");
  auto dedup = CreateSelectedPlugin<MetricDedup>(selection, "metric_dedup");
  EXPECT_EQ(dedup.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(dedup.status().message(), HasSubstr("by_receipt_id, none"));
}

}  // namespace
}  // namespace receipt_parity
