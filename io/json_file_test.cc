#include "io/json_file.h"

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/atomic_file.h"
#include "io/json_file_test.pb.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;

TEST(JsonFileTest, PrintsDefaultsWithProtoFieldNames) {
  io_testing::Counter message;
  EXPECT_THAT(ToJson(message), HasSubstr("\"value\": 0"));
}

TEST(JsonFileTest, MapsPrintSortedByKeySoOutputIsByteStable) {
  io_testing::MapHolder a;
  io_testing::MapHolder b;
  for (int i = 0; i < 50; ++i) (*a.mutable_entries())[std::to_string(i)] = i;
  for (int i = 49; i >= 0; --i) (*b.mutable_entries())[std::to_string(i)] = i;
  const std::string json = ToJson(a);
  EXPECT_EQ(json, ToJson(b));
  EXPECT_LT(json.find("\"10\""), json.find("\"2\""));
}

TEST(JsonFileTest, RoundTripsThroughAFile) {
  const std::string path = ::testing::TempDir() + "/round_trip.json";
  io_testing::Greeting written;
  written.set_greeting("hi");
  ASSERT_TRUE(WriteJsonFile(path, written).ok());
  io_testing::Greeting read;
  ASSERT_TRUE(ReadJsonFile(path, &read).ok());
  EXPECT_EQ(read.greeting(), "hi");
}

TEST(JsonFileTest, BadJsonNamesTheFile) {
  const std::string path = ::testing::TempDir() + "/bad.json";
  ASSERT_TRUE(WriteFileAtomically(path, "{\"greeting\": 3, ").ok());
  io_testing::Greeting read;
  absl::Status status = ReadJsonFile(path, &read);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr(path));
}

TEST(JsonFileTest, UnknownKeysAreErrors) {
  const std::string path = ::testing::TempDir() + "/unknown.json";
  ASSERT_TRUE(WriteFileAtomically(path, "{\"greting\": \"hi\"}").ok());
  io_testing::Greeting read;
  EXPECT_FALSE(ReadJsonFile(path, &read).ok());
}

}  // namespace
}  // namespace receipt_parity
