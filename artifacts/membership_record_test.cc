#include "artifacts/membership_record.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/atomic_file.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

std::string FreshDir(const std::string& name) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

MembershipChange Lost(int rank, const std::string& why) {
  MembershipChange change;
  change.set_attempt(1);
  change.add_left(rank);
  change.add_why(why);
  change.set_updates_completed(12);
  change.set_detection_seconds(5.25);
  change.set_world_size_before(3);
  change.set_world_size_after(2);
  change.set_outcome("attempt_ended");
  return change;
}

TEST(MembershipRecordTest, ChangesAppendAcrossAttemptsInOrderWithTheStamp) {
  const std::string dir = FreshDir("append");
  ASSERT_TRUE(AppendMembershipChanges(dir, MakeArtifactStamp("f00", 1),
                                      {Lost(2, "was killed by signal 9 (Killed)")})
                  .ok());
  ASSERT_TRUE(AppendMembershipChanges(dir, MakeArtifactStamp("f00", 2),
                                      {Lost(0, "stopped answering")})
                  .ok());
  MembershipRecord record;
  ArtifactStamp stamp;
  ASSERT_TRUE(ReadArtifact(dir + "/membership.json", &record, &stamp).ok());
  ASSERT_EQ(record.changes_size(), 2);
  EXPECT_EQ(record.changes(0).left(0), 2);
  EXPECT_EQ(record.changes(0).why(0), "was killed by signal 9 (Killed)");
  EXPECT_EQ(record.changes(1).left(0), 0);
  EXPECT_EQ(record.changes(1).detection_seconds(), 5.25);
  EXPECT_EQ(stamp.attempt(), 2);
  const std::string text = *ReadFileToString(dir + "/membership.json");
  EXPECT_THAT(text, HasSubstr("\"updates_completed\": 12"));
  EXPECT_THAT(text, HasSubstr("\"outcome\": \"attempt_ended\""));
}

TEST(MembershipRecordTest, AFileThatDoesNotReadIsNamedAndLeftAsItWas) {
  const std::string dir = FreshDir("damaged");
  ASSERT_TRUE(WriteFileAtomically(dir + "/membership.json", "{\"changes\": [tru").ok());
  const absl::Status status =
      AppendMembershipChanges(dir, MakeArtifactStamp("f00", 1), {Lost(1, "x")});
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(dir + "/membership.json"));
  EXPECT_EQ(*ReadFileToString(dir + "/membership.json"), "{\"changes\": [tru");
}

}  // namespace
}  // namespace receipt_parity
