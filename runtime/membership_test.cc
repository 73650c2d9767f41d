#include "runtime/membership.h"

#include <chrono>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/process_group.h"
#include "runtime/store_host.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;

TEST(MembershipTest, FormatAndParseAreInverse) {
  EXPECT_EQ(FormatMembership({0, 2, 5}), "0,2,5");
  EXPECT_THAT(*ParseMembership("0,2,5"), ElementsAre(0, 2, 5));
  // A replacement comes after the survivors.
  EXPECT_THAT(*ParseMembership("1,2,0"), ElementsAre(1, 2, 0));
  for (const char* bad : {"", "0,,2", "2,1,2", "1,1", "-1", "0,x"}) {
    EXPECT_FALSE(ParseMembership(bad).ok()) << "'" << bad << "'";
  }
}

TEST(MembershipTest, ReformedReportsReadBack) {
  const std::string text = FormatReformed(ReformedReport{0.042, 1, 13});
  std::optional<ReformedReport> read = ParseReformed(text);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->reforming_seconds, 0.042);
  EXPECT_EQ(read->updates_redone, 1);
  EXPECT_EQ(read->went_on_from_update, 13);
  EXPECT_FALSE(ParseReformed("0.1 1").has_value());
  EXPECT_FALSE(ParseReformed("a b c").has_value());
}

TEST(MembershipTest, ASurvivorReadsThePublishedMembershipOrNoneInTime) {
  const int port = *PickFreePort();
  auto host = HostStore("127.0.0.1", port, std::chrono::seconds(5));
  ASSERT_TRUE(host.ok()) << host.status();
  auto survivor = ConnectToStore("127.0.0.1", port, std::chrono::seconds(5));
  ASSERT_TRUE(survivor.ok()) << survivor.status();
  auto none = AwaitMembership(**survivor, 1, std::chrono::milliseconds(100));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(PublishMembership(**host, 1, {0, 2}).ok());
  auto members = AwaitMembership(**survivor, 1, std::chrono::milliseconds(100));
  ASSERT_TRUE(members.ok());
  ASSERT_TRUE(members->has_value());
  EXPECT_THAT(**members, ElementsAre(0, 2));
  (*host)->set(MembershipKey(2), std::vector<uint8_t>{'x'});
  EXPECT_TRUE(absl::IsDataLoss(AwaitMembership(**survivor, 2, std::chrono::milliseconds(100))
                                   .status()));
}

}  // namespace
}  // namespace receipt_parity
