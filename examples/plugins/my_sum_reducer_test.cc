// Loads the example reducer library into this statically linked, -rdynamic
// host (as the trainer does), selects `my_sum` with its own options and
// reduces over a real two-rank Gloo group whose ranks are threads.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "plugins/plugin_library.h"
#include "plugins/plugin_selection.h"
#include "reducers/gradient_buckets.h"
#include "reducers/gradient_reducer.h"
#include "collectives/local_process_group.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const absl::StatusOr<std::vector<std::string>>& FirstLoad() {
  static const auto* first = new absl::StatusOr<std::vector<std::string>>(
      LoadPluginLibrary(absl::StrCat(std::getenv("TEST_SRCDIR"), "/",
                                     std::getenv("TEST_WORKSPACE"),
                                     "/examples/plugins/libmy_sum_reducer.so")));
  return *first;
}

absl::StatusOr<std::unique_ptr<GradientReducer>> SelectMySum(
    const std::string& options_text) {
  PluginSelection selection;
  const std::string text = absl::StrCat(
      "name: 'my_sum' options { "
      "[type.googleapis.com/receipt_parity.MySumOptions] { ",
      options_text, " } }");
  if (!google::protobuf::TextFormat::ParseFromString(text, &selection)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot parse: ", text));
  }
  return CreateSelectedPlugin<GradientReducer>(selection, "reducer");
}

// Three gradients per rank; rank r's are (r + 1) times a ramp.
std::vector<at::Tensor> RankGradients(int rank) {
  const float scale = static_cast<float>(rank + 1);
  return {at::arange(6, at::kFloat).reshape({2, 3}) * scale,
          at::arange(5, at::kFloat) * -scale, at::full({4}, scale)};
}

// Reduces on two ranks with `options_text`; checks every rank ends with
// the sum and ran `collectives` all-reduces.
void ExpectSumOnTwoRanks(const std::string& options_text, int collectives) {
  ASSERT_TRUE(FirstLoad().ok()) << FirstLoad().status();
  std::vector<std::unique_ptr<GradientReducer>> reducers;
  std::vector<std::vector<at::Tensor>> grads;
  for (int rank = 0; rank < 2; ++rank) {
    auto reducer = SelectMySum(options_text);
    ASSERT_TRUE(reducer.ok()) << reducer.status();
    reducers.push_back(*std::move(reducer));
    grads.push_back(RankGradients(rank));
  }
  absl::Status status = RunOnLocalGroup(2, [&](int rank, c10d::ProcessGroup& group) {
    return ReduceInBuckets(*reducers[rank], grads[rank], group);
  });
  ASSERT_TRUE(status.ok()) << status;
  const std::vector<at::Tensor> one = RankGradients(0), two = RankGradients(1);
  for (int rank = 0; rank < 2; ++rank) {
    for (size_t i = 0; i < one.size(); ++i) {
      EXPECT_TRUE(at::equal(grads[rank][i], one[i] + two[i])) << rank << " " << i;
    }
    EXPECT_EQ(reducers[rank]->stats().collectives, collectives) << options_text;
    EXPECT_EQ(reducers[rank]->stats().bytes, 15 * 4);
  }
}

TEST(MySumReducerTest, LoadingRegistersMySum) {
  ASSERT_TRUE(FirstLoad().ok()) << FirstLoad().status();
  EXPECT_THAT(*FirstLoad(), ElementsAre("reducer/my_sum"));
}

TEST(MySumReducerTest, SumsEveryGradientOverTheRanks) {
  ExpectSumOnTwoRanks("", 1);                             // all in one
  ExpectSumOnTwoRanks("gradients_per_collective: 1", 3);  // one each
  ExpectSumOnTwoRanks("gradients_per_collective: 2", 2);
  ExpectSumOnTwoRanks("gradients_per_collective: 9", 1);
}

TEST(MySumReducerTest, ANegativeCountIsRefusedNamingTheField) {
  ASSERT_TRUE(FirstLoad().ok()) << FirstLoad().status();
  auto reducer = SelectMySum("gradients_per_collective: -1");
  EXPECT_EQ(reducer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(reducer.status().message(),
              HasSubstr("reducer.options: gradients_per_collective: must be >= 0"));
}

}  // namespace
}  // namespace receipt_parity
