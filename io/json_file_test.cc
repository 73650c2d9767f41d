#include "io/json_file.h"

#include <cmath>
#include <filesystem>
#include <limits>

#include "absl/strings/str_cat.h"
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

// Values of every kind protobuf prints differently: integers, fractions,
// exponents, negative zero, infinities and NaN.
void FillArray(int count, int seed, io_testing::Array* array) {
  array->add_shape(count);
  array->set_scale(seed * 0.25);
  for (int i = 0; i < count; ++i) {
    const int kind = (i + seed) % 7;
    const float value =
        kind == 0   ? static_cast<float>(i)
        : kind == 1 ? 1.0f / static_cast<float>(i + 3)
        : kind == 2 ? -3.5e-20f * static_cast<float>(i)
        : kind == 3 ? -0.0f
        : kind == 4 ? std::numeric_limits<float>::infinity()
        : kind == 5 ? std::nanf("")
                    : 1.25e30f;
    array->add_values(value);
  }
}

io_testing::ArrayHolder HolderWithLongArrays() {
  io_testing::ArrayHolder holder;  // rank 0, note "" and `unset` are defaults
  for (const char* name : {"fc.weight", "a.bias", "conv.weight", "empty"}) {
    io_testing::Array& array = (*holder.mutable_by_name())[name];
    if (std::string(name) != "empty") FillArray(3000, name[0], &array);
  }
  FillArray(1024, 1, holder.add_in_order());
  FillArray(1023, 2, holder.add_in_order());  // just short of printed apart
  FillArray(5000, 3, holder.mutable_single());
  for (int i = 0; i < 2000; ++i) holder.add_seconds(i * 1e-3);
  return holder;
}

TEST(JsonFileTest, LongArraysPrintExactlyAsProtobufPrintsTheWholeMessage) {
  const io_testing::ArrayHolder holder = HolderWithLongArrays();
  int apart = -1;
  const std::string json = ToJson(holder, &apart);
  // Three by name, one in order, single, seconds.
  EXPECT_EQ(apart, 6);
  EXPECT_EQ(json, ToJsonInOnePass(holder));
  // Defaults are still printed, and the text reads back to the message.
  EXPECT_THAT(json, HasSubstr("\"rank\": 0"));
  EXPECT_THAT(json, HasSubstr("\"note\": \"\""));
  const std::string path = ::testing::TempDir() + "/long_arrays.json";
  ASSERT_TRUE(WriteJsonFile(path, holder).ok());
  absl::StatusOr<std::string> written = ReadFileToString(path);
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(*written, json);
  io_testing::ArrayHolder read;
  ASSERT_TRUE(ReadJsonFile(path, &read).ok());
  EXPECT_EQ(read.by_name().at("fc.weight").values_size(), 3000);
  EXPECT_EQ(read.single().values(4), holder.single().values(4));
  EXPECT_EQ(read.seconds(1999), holder.seconds(1999));
}

// Reading a map's entries through reflection makes protobuf keep a second
// copy of the map inside the message; printing must not grow the caller's.
TEST(JsonFileTest, PrintingLeavesTheMessagesMapsAsTheyWere) {
  const io_testing::ArrayHolder holder = HolderWithLongArrays();
  const size_t before = holder.SpaceUsedLong();
  EXPECT_EQ(ToJson(holder), ToJsonInOnePass(holder));
  const std::string path = ::testing::TempDir() + "/maps_untouched.json";
  ASSERT_TRUE(WriteJsonFile(path, holder).ok());
  EXPECT_EQ(holder.SpaceUsedLong(), before);
  io_testing::ArrayHolder small;
  (*small.mutable_by_name())["x"].add_values(1.5f);
  const size_t small_before = small.SpaceUsedLong();
  EXPECT_EQ(ToJson(small), ToJsonInOnePass(small));
  EXPECT_EQ(small.SpaceUsedLong(), small_before);
}

TEST(JsonFileTest, AMessageHoldingAMarkerValueIsPrintedWholeAndTheSame) {
  io_testing::ArrayHolder holder = HolderWithLongArrays();
  // The first array printed apart is marked with 1e30 in its place; a
  // short array holding 1e30 itself makes that mark ambiguous.
  holder.add_in_order()->add_values(1e30f);
  int apart = -1;
  EXPECT_EQ(ToJson(holder, &apart), ToJsonInOnePass(holder));
  EXPECT_EQ(apart, 0);
}

io_testing::Audit AuditWithManyEpochs() {
  io_testing::Audit audit;
  audit.set_policy("masked \"tail\" {x}");
  for (int e = 0; e < 40; ++e) {
    io_testing::Epoch* epoch = audit.add_epochs();
    epoch->set_epoch(e);  // epoch 0 is a default
    const int slots = e == 3 ? 10 : 400;  // epoch 3 is small
    for (int i = 0; i < slots; ++i) {
      epoch->add_indices(i * 7 % 1000 - 3);
      epoch->add_ids(absl::StrCat("r-", i, i % 5 == 0 ? "\"}{" : ""));
      epoch->add_valid(i % 3 != 0);
    }
    (*epoch->mutable_counts())["a"] = e;
    if (e == 5) FillArray(3000, 4, epoch->mutable_nested());  // apart in turn
  }
  return audit;
}

TEST(JsonFileTest, ElementsHoldingManyValuesPrintExactlyAsProtobufPrintsThem) {
  const io_testing::Audit audit = AuditWithManyEpochs();
  int apart = -1;
  const std::string json = ToJson(audit, &apart);
  EXPECT_EQ(apart, 39);  // every epoch but the small one
  EXPECT_EQ(json, ToJsonInOnePass(audit));
  EXPECT_THAT(json, HasSubstr("\"epoch\": 0,"));
  const std::string path = ::testing::TempDir() + "/audit.json";
  ASSERT_TRUE(WriteJsonFile(path, audit).ok());
  EXPECT_EQ(*ReadFileToString(path), json);
}

// Written in place: the same bytes, and the message as it was (its parts
// moved out and back), for every path through the printer.
void ExpectWrittenInPlaceAsIs(google::protobuf::Message* message, const std::string& name) {
  const std::string expected = ToJsonInOnePass(*message);
  const std::string before = message->SerializeAsString();
  const std::string path = ::testing::TempDir() + "/" + name + ".json";
  ASSERT_TRUE(WriteJsonFileInPlace(path, message).ok());
  EXPECT_EQ(*ReadFileToString(path), expected);
  EXPECT_EQ(message->SerializeAsString(), before);
}

TEST(JsonFileTest, WrittenInPlaceTheTextIsTheSameAndTheMessageAsItWas) {
  io_testing::Audit audit = AuditWithManyEpochs();
  for (io_testing::Epoch& epoch : *audit.mutable_epochs()) epoch.clear_counts();
  ExpectWrittenInPlaceAsIs(&audit, "in_place_audit");
  io_testing::ArrayHolder holder = HolderWithLongArrays();
  holder.clear_by_name();
  ExpectWrittenInPlaceAsIs(&holder, "in_place_arrays");
  holder.add_in_order()->add_values(1e30f);  // a marker's value: printed whole
  ExpectWrittenInPlaceAsIs(&holder, "in_place_marker");
  io_testing::Greeting small;
  small.set_greeting("hi");
  ExpectWrittenInPlaceAsIs(&small, "in_place_small");
}

TEST(JsonFileTest, AMessageWithAMapIsWrittenInPlaceFromACopy) {
  io_testing::ArrayHolder holder = HolderWithLongArrays();
  const size_t space = holder.SpaceUsedLong();
  const std::string path = ::testing::TempDir() + "/in_place_map.json";
  ASSERT_TRUE(WriteJsonFileInPlace(path, &holder).ok());
  EXPECT_EQ(*ReadFileToString(path), ToJsonInOnePass(holder));
  EXPECT_EQ(holder.SpaceUsedLong(), space);
}

}  // namespace
}  // namespace receipt_parity
