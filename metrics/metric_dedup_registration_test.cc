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

absl::StatusOr<std::unique_ptr<MetricDedup>> SelectWith(const std::string& name,
                                                        const google::protobuf::Message& options) {
  PluginSelection selection;
  selection.set_name(name);
  selection.mutable_options()->PackFrom(options);
  return CreateSelectedPlugin<MetricDedup>(selection, "metric_dedup");
}

template <typename Options>
absl::StatusOr<std::unique_ptr<MetricDedup>> Select(const std::string& name) {
  return SelectWith(name, Options());
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

TEST(MetricDedupRegistrationTest, ByReceiptIdMergesAsItsOptionsSay) {
  auto dedup = Select<ByReceiptIdOptions>("by_receipt_id");
  ASSERT_TRUE(dedup.ok()) << dedup.status();
  // auto: gathered below 100000 predictions, streamed in 4096s from there.
  EXPECT_EQ((*dedup)->StreamedMergeChunk(99999), 0);
  EXPECT_EQ((*dedup)->StreamedMergeChunk(100000), 4096);

  ByReceiptIdOptions options;
  options.set_merge("streamed");
  options.set_chunk_rows(3);
  dedup = SelectWith("by_receipt_id", options);
  ASSERT_TRUE(dedup.ok()) << dedup.status();
  EXPECT_EQ((*dedup)->StreamedMergeChunk(1), 3);

  options.set_merge("gathered");
  dedup = SelectWith("by_receipt_id", options);
  ASSERT_TRUE(dedup.ok()) << dedup.status();
  EXPECT_EQ((*dedup)->StreamedMergeChunk(int64_t{1} << 40), 0);

  options.set_merge("auto");
  options.set_streamed_from(10);
  dedup = SelectWith("by_receipt_id", options);
  ASSERT_TRUE(dedup.ok()) << dedup.status();
  EXPECT_EQ((*dedup)->StreamedMergeChunk(9), 0);
  EXPECT_EQ((*dedup)->StreamedMergeChunk(10), 3);
}

TEST(MetricDedupRegistrationTest, ByReceiptIdRefusesBadMergeOptions) {
  ByReceiptIdOptions options;
  options.set_merge("sorted");
  auto dedup = SelectWith("by_receipt_id", options);
  EXPECT_EQ(dedup.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dedup.status().message(),
              HasSubstr("merge: 'sorted' is not one of auto, gathered, streamed"));

  options.Clear();
  options.set_chunk_rows(-1);
  dedup = SelectWith("by_receipt_id", options);
  EXPECT_THAT(dedup.status().message(), HasSubstr("chunk_rows: -1 must be >= 0"));

  options.Clear();
  options.set_streamed_from(-5);
  dedup = SelectWith("by_receipt_id", options);
  EXPECT_THAT(dedup.status().message(), HasSubstr("streamed_from: -5 must be >= 0"));
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
