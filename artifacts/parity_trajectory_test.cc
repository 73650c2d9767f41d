#include "artifacts/parity_trajectory.h"

#include <filesystem>
#include <fstream>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string FreshDir(const std::string& name) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TrajectoryPoint Point(int64_t update) {
  TrajectoryPoint p;
  p.checked.update = update;
  p.checked.loss = 0.25 + update;
  p.checked.parameters = {{"fc.weight", at::arange(6, at::kFloat).reshape({2, 3})},
                          {"a.bias", at::tensor({-1.5f})}};
  p.learning_rate = 0.01;
  p.accepted_examples = 16;
  return p;
}

TEST(ParityTrajectoryTest, APointReadsBackInRegistrationOrderBitwise) {
  const std::string dir = FreshDir("roundtrip");
  const ArtifactStamp stamp = MakeArtifactStamp("abc", 2);
  ASSERT_TRUE(WriteTrajectoryPoint(dir, Point(7), stamp).ok());
  ASSERT_TRUE(WriteTrajectoryPoint(dir, Point(0), stamp).ok());
  EXPECT_THAT(RecordedTrajectoryUpdates(dir), ElementsAre(0, 7));
  auto read = ReadTrajectoryPoint(dir, 7, {"abc"});
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->checked.update, 7);
  EXPECT_EQ(read->checked.loss, 7.25);
  EXPECT_EQ(read->accepted_examples, 16);
  ASSERT_EQ(read->checked.parameters.size(), 2u);
  EXPECT_EQ(read->checked.parameters[0].first, "fc.weight");
  EXPECT_TRUE(read->checked.parameters[0].second.equal(Point(7).checked.parameters[0].second));
  EXPECT_EQ(read->checked.parameters[1].first, "a.bias");
}

TEST(ParityTrajectoryTest, AMissingOrDamagedOrForeignPointIsAnErrorNamingIt) {
  const std::string dir = FreshDir("damaged");
  ASSERT_TRUE(WriteTrajectoryPoint(dir, Point(3), MakeArtifactStamp("abc", 1)).ok());
  auto missing = ReadTrajectoryPoint(dir, 4);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  auto foreign = ReadTrajectoryPoint(dir, 3, {"other"});
  EXPECT_EQ(foreign.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(foreign.status().message(), HasSubstr("update-3.json"));
  {
    // Same size, other bytes: the SHA-1 catches it.
    std::fstream f(dir + "/trajectory/update-3.pt", std::ios::in | std::ios::out |
                                                        std::ios::binary);
    f.seekp(40);
    f.put('\x7f');
  }
  auto damaged = ReadTrajectoryPoint(dir, 3);
  EXPECT_EQ(damaged.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(damaged.status().message(), HasSubstr("SHA-1"));
  {
    std::ofstream f(dir + "/trajectory/update-3.pt", std::ios::app | std::ios::binary);
    f << "grown";
  }
  auto grown = ReadTrajectoryPoint(dir, 3);
  EXPECT_EQ(grown.status().code(), absl::StatusCode::kDataLoss);
}

TEST(ParityTrajectoryTest, APointLinkedFromOutsideTheRunFolderIsNotRead) {
  const std::string elsewhere = FreshDir("elsewhere");
  ASSERT_TRUE(WriteTrajectoryPoint(elsewhere, Point(1), MakeArtifactStamp("abc", 1)).ok());
  const std::string dir = FreshDir("linked");
  fs::create_directory_symlink(elsewhere + "/trajectory", dir + "/trajectory");
  auto read = ReadTrajectoryPoint(dir, 1);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace receipt_parity
