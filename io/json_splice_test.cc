#include "io/json_splice.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

// Laid out as protobuf prints with whitespace: one space per level.
constexpr char kSkeleton[] =
    "{\n"
    " \"values\": [\n"
    "  1e+30\n"
    " ],\n"
    " \"epochs\": [\n"
    "  {\n"
    "   \"epoch\": -2000000000\n"
    "  },\n"
    "  {\n"
    "   \"epoch\": 4\n"
    "  }\n"
    " ],\n"
    " \"note\": \"1e+30\"\n"
    "}\n";

TEST(JsonSpliceTest, FindsAnArraysBracketsAndAnElementsBracesInTextOrder) {
  const std::string skeleton = kSkeleton;
  const std::vector<SpliceMarker> markers = {{"\"epoch\": -2000000000", true},
                                             {"1e+30", false}};
  const std::vector<SplicePlace> places = FindSplicePlaces(skeleton, markers);
  ASSERT_EQ(places.size(), 2u);
  EXPECT_EQ(places[0].part, 1u);  // the array comes first in the text
  EXPECT_EQ(places[0].open, skeleton.find('['));
  EXPECT_EQ(places[0].close, skeleton.find(']'));
  EXPECT_EQ(places[0].indent, "");
  EXPECT_EQ(places[1].part, 0u);
  EXPECT_EQ(places[1].open, skeleton.find("  {") + 2);
  EXPECT_EQ(places[1].close, skeleton.find("  },") + 2);
  EXPECT_EQ(places[1].indent, "  ");
}

TEST(JsonSpliceTest, AMarkerThatIsNotOnALineOfItsOwnExactlyOnceHasNoPlace) {
  const std::string twice = std::string(kSkeleton) + " 1e+30\n";
  EXPECT_TRUE(FindSplicePlaces(twice, {{"1e+30", false}}).empty());
  EXPECT_TRUE(FindSplicePlaces(kSkeleton, {{"2e+30", false}}).empty());
  // Inside a string, not a value of its own.
  EXPECT_TRUE(FindSplicePlaces(kSkeleton, {{"\"1e+30\"", false}}).empty());
  // A field line whose element braces are not there.
  EXPECT_TRUE(FindSplicePlaces(kSkeleton, {{"1e+30", true}}).empty());
}

TEST(JsonSpliceTest, IndentFollowsEveryLineBreak) {
  std::string written;
  const ByteSink sink = [&written](absl::string_view bytes) {
    written.append(bytes.data(), bytes.size());
    return absl::OkStatus();
  };
  ASSERT_TRUE(WriteIndented("[\n 1,\n 2\n]", "   ", sink).ok());
  EXPECT_EQ(written, "[\n    1,\n    2\n   ]");
  const std::string long_text(200000, 'x');
  written.clear();
  ASSERT_TRUE(WriteIndented(long_text, "  ", sink).ok());
  EXPECT_EQ(written, long_text);
}

TEST(JsonSpliceTest, ASinkErrorStopsTheWrite) {
  int calls = 0;
  const ByteSink failing = [&calls](absl::string_view) {
    ++calls;
    return absl::InternalError("disk full");
  };
  EXPECT_EQ(WriteIndented(std::string(300000, 'x'), "", failing).code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace receipt_parity
