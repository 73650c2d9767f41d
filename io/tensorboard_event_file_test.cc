#include "io/tensorboard_event_file.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/atomic_file.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

std::string TempDir(const std::string& name) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

EventFileContents TwoCurves() {
  EventFileContents contents;
  contents.wall_time = 1764979200.5;
  contents.restart_step = 6;
  contents.scalars = {{"train/loss", 6, 0.75}, {"train/loss", 7, 0.5},
                      {"validation/accuracy", 8, 0.25}};
  return contents;
}

TEST(Crc32cTest, IsTheCastagnoliChecksum) {
  // The check value of CRC-32C (RFC 3720, B.4).
  EXPECT_EQ(Crc32c("123456789"), 0xe3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
  const uint32_t crc = Crc32c("123456789");
  EXPECT_EQ(MaskedCrc32c("123456789"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST(EventProtoTest, WritesTensorBoardsFieldNumbers) {
  // The wire bytes TensorBoard's own event.proto and summary.proto give:
  // session_log is field 7, summary 5 and its value's tag 1, simple_value 2.
  tensorboard::Event restart;
  restart.mutable_session_log()->set_status(tensorboard::SessionLog::START);
  EXPECT_EQ(restart.SerializeAsString(), std::string("\x3a\x02\x08\x01", 4));
  tensorboard::Event scalar;
  scalar.set_step(3);
  tensorboard::Summary::Value* value = scalar.mutable_summary()->add_value();
  value->set_tag("a");
  value->set_simple_value(1.0f);
  EXPECT_EQ(scalar.SerializeAsString(),
            std::string("\x10\x03\x2a\x0a\x0a\x08\x0a\x01" "a" "\x15\x00\x00\x80\x3f", 14));
}

TEST(TfRecordTest, FramesLengthDataAndBothChecksums) {
  const std::string record = FrameTfRecord("abc");
  ASSERT_EQ(record.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(record.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(record.substr(12, 3), "abc");
  const uint32_t data_crc = MaskedCrc32c("abc");
  EXPECT_EQ(static_cast<unsigned char>(record[15]), data_crc & 0xffu);
  EXPECT_EQ(static_cast<unsigned char>(record[18]), data_crc >> 24);
}

TEST(EventFileTest, WritesVersionRestartAndScalarsInOrder) {
  const std::string dir = TempDir("round_trip");
  const std::string name = EventFileName(1764979200, 2);
  ASSERT_TRUE(WriteEventFile(dir, name, TwoCurves()).ok());
  absl::StatusOr<std::vector<tensorboard::Event>> events = ReadEventFile(dir + "/" + name);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 5u);
  EXPECT_EQ((*events)[0].file_version(), "brain.Event:2");
  EXPECT_EQ((*events)[1].step(), 6);
  EXPECT_EQ((*events)[1].session_log().status(), tensorboard::SessionLog::START);
  EXPECT_EQ((*events)[2].summary().value(0).tag(), "train/loss");
  EXPECT_EQ((*events)[2].step(), 6);
  EXPECT_FLOAT_EQ((*events)[3].summary().value(0).simple_value(), 0.5f);
  EXPECT_EQ((*events)[4].step(), 8);
  for (const tensorboard::Event& event : *events) EXPECT_EQ(event.wall_time(), 1764979200.5);
}

TEST(EventFileTest, AFreshRunHasNoRestartMarker) {
  EventFileContents contents = TwoCurves();
  contents.restart_step.reset();
  const std::string dir = TempDir("fresh");
  ASSERT_TRUE(WriteEventFile(dir, "events.out.tfevents.x", contents).ok());
  absl::StatusOr<std::vector<tensorboard::Event>> events =
      ReadEventFile(dir + "/events.out.tfevents.x");
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 4u);
  for (const tensorboard::Event& event : *events) EXPECT_FALSE(event.has_session_log());
}

TEST(EventFileTest, NamesSortByAttemptWithinOneSecondAndByTime) {
  EXPECT_EQ(EventFileName(1764979200, 3),
            "events.out.tfevents.1764979200.attempt-00003.receipt_parity");
  EXPECT_LT(EventFileName(1764979200, 9), EventFileName(1764979200, 10));
  EXPECT_LT(EventFileName(999999999, 10), EventFileName(1764979200, 1));
}

TEST(EventFileTest, RemovesATemporaryFileADeadWriterLeft) {
  const std::string dir = TempDir("stale");
  std::filesystem::create_directories(dir);
  const std::string stale = TempPathFor(dir + "/events.out.tfevents.1.attempt-00001.x");
  std::ofstream(stale) << "half";
  ASSERT_TRUE(WriteEventFile(dir, EventFileName(2, 2), TwoCurves()).ok());
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(dir + "/" + EventFileName(2, 2)));
}

TEST(EventFileTest, NothingIsWrittenThroughALinkOrIntoAFile) {
  const std::string dir = TempDir("link");
  const std::string elsewhere = TempDir("elsewhere");
  std::filesystem::create_directories(dir);
  std::filesystem::create_directories(elsewhere);
  std::filesystem::create_directory_symlink(elsewhere, dir + "/tensorboard");
  absl::Status linked = WriteEventFile(dir + "/tensorboard", "events.out.tfevents.1", TwoCurves());
  EXPECT_EQ(linked.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(linked.message(), HasSubstr(dir + "/tensorboard is a link"));
  EXPECT_TRUE(std::filesystem::is_empty(elsewhere));
  std::ofstream(dir + "/plain") << "x";
  EXPECT_EQ(WriteEventFile(dir + "/plain", "events.out.tfevents.1", TwoCurves()).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(EventFileTest, ATruncatedOrCorruptFileIsRefusedWithItsPathAndOffset) {
  const std::string bytes = EncodeEventFile(TwoCurves());
  const std::string dir = TempDir("corrupt");
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/events.out.tfevents.bad";
  for (size_t cut : {bytes.size() - 1, bytes.size() - 10, size_t{5}}) {
    ASSERT_TRUE(WriteFileAtomically(path, bytes.substr(0, cut)).ok());
    absl::StatusOr<std::vector<tensorboard::Event>> events = ReadEventFile(path);
    ASSERT_FALSE(events.ok()) << "cut at " << cut;
    EXPECT_EQ(events.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(events.status().message(), HasSubstr(path));
    EXPECT_THAT(events.status().message(), HasSubstr("truncated"));
  }
  std::string flipped = bytes;
  flipped[bytes.size() - 6] ^= 0x01;  // inside the last record's data
  ASSERT_TRUE(WriteFileAtomically(path, flipped).ok());
  absl::StatusOr<std::vector<tensorboard::Event>> events = ReadEventFile(path);
  ASSERT_FALSE(events.ok());
  EXPECT_THAT(events.status().message(), HasSubstr("fails its CRC"));
  EXPECT_EQ(ReadEventFile(dir + "/missing").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace receipt_parity
