#include "io/json_appended_fields.h"

#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "io/atomic_file.h"
#include "io/json_file.h"
#include "io/json_file_test.pb.h"

namespace receipt_parity {
namespace {

using io_testing::Array;
using io_testing::ArrayHolder;
using io_testing::Counter;
using io_testing::Empty;
using io_testing::Label;
using io_testing::Named;

std::string TestPath(const std::string& name) {
  return absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
}

std::string Read(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

Label MakeLabel() {
  Label label;
  label.set_name("fp \"quoted\" \\ 1");
  label.set_count(3);
  return label;
}

// Long enough for its arrays to be printed apart (io/json_file.h).
ArrayHolder LongHolder() {
  ArrayHolder holder;
  holder.set_rank(2);
  Array& single = *holder.mutable_single();
  single.add_shape(3000);
  for (int i = 0; i < 3000; ++i) single.add_values(i * 0.25f);
  (*holder.mutable_by_name())["w"] = single;
  *holder.add_in_order() = single;
  holder.set_note("last");
  return holder;
}

TEST(JsonAppendedFieldsTest, TheTextIsTheMessagesThenTheAppendedFieldsInOneObject) {
  const ArrayHolder holder = LongHolder();
  const Label label = MakeLabel();
  const std::string path = TestPath("appended.json");
  ASSERT_TRUE(WriteJsonFile(path, holder, &label).ok());

  std::string expected(absl::StripSuffix(ToJson(holder), "\n}\n"));
  absl::StrAppend(&expected, ",\n",
                  absl::StripSuffix(absl::StripPrefix(ToJson(label), "{\n"), "\n}\n"),
                  "\n}\n");
  EXPECT_EQ(Read(path), expected);
  EXPECT_TRUE(absl::EndsWith(Read(path), "\"count\": 3\n}\n")) << Read(path);
}

TEST(JsonAppendedFieldsTest, BothMessagesReadBackEqual) {
  ArrayHolder holder = LongHolder();
  const Label label = MakeLabel();
  const std::string path = TestPath("read_back.json");
  ASSERT_TRUE(WriteJsonFileInPlace(path, &holder, &label).ok());
  EXPECT_EQ(holder.SerializeAsString(), LongHolder().SerializeAsString());

  ArrayHolder holder_read;
  Label label_read;
  absl::Status read = ReadJsonFile(path, &holder_read, &label_read);
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(holder_read.single().values_size(), 3000);
  EXPECT_EQ(holder_read.note(), "last");
  EXPECT_EQ(ToJson(holder_read), ToJson(holder));
  EXPECT_EQ(label_read.name(), label.name());
  EXPECT_EQ(label_read.count(), 3);
  // Nothing of the appended fields is left in the message.
  EXPECT_EQ(holder_read.GetReflection()->GetUnknownFields(holder_read).field_count(), 0);
}

TEST(JsonAppendedFieldsTest, InPlaceWritesTheSameBytes) {
  ArrayHolder holder = LongHolder();
  const Label label = MakeLabel();
  ASSERT_TRUE(WriteJsonFile(TestPath("a.json"), holder, &label).ok());
  ASSERT_TRUE(WriteJsonFileInPlace(TestPath("b.json"), &holder, &label).ok());
  EXPECT_EQ(Read(TestPath("a.json")), Read(TestPath("b.json")));
}

TEST(JsonAppendedFieldsTest, UnknownKeysAreStillErrors) {
  const Label label = MakeLabel();
  Counter counter;
  counter.set_value(5);
  const std::string path = TestPath("counter.json");
  ASSERT_TRUE(WriteJsonFile(path, counter, &label).ok());

  // Read without the appended message: its keys are unknown.
  Counter plain;
  absl::Status without = ReadJsonFile(path, &plain);
  EXPECT_EQ(without.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(without.message(), path)) << without;

  // A key of neither message.
  ASSERT_TRUE(WriteFileAtomically(
                  path, "{\"value\": 5, \"name\": \"x\", \"count\": 1, \"stray\": 2}")
                  .ok());
  Counter read;
  Label label_read;
  absl::Status stray = ReadJsonFile(path, &read, &label_read);
  EXPECT_EQ(stray.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(stray.message(), "stray")) << stray;

  // A value of the wrong type among the appended fields.
  ASSERT_TRUE(WriteFileAtomically(path, "{\"value\": 5, \"count\": \"three\"}").ok());
  EXPECT_EQ(ReadJsonFile(path, &read, &label_read).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(JsonAppendedFieldsTest, MissingAppendedKeysReadAsDefaults) {
  const std::string path = TestPath("no_label.json");
  ASSERT_TRUE(WriteFileAtomically(path, "{\"value\": 7}").ok());
  Counter counter;
  Label label = MakeLabel();
  label.Clear();
  ASSERT_TRUE(ReadJsonFile(path, &counter, &label).ok());
  EXPECT_EQ(counter.value(), 7);
  EXPECT_EQ(label.name(), "");
  EXPECT_EQ(label.count(), 0);
}

TEST(JsonAppendedFieldsTest, AMessageWithoutFieldsGetsTheAppendedOnesAlone) {
  const Label label = MakeLabel();
  const std::string path = TestPath("empty.json");
  ASSERT_TRUE(WriteJsonFile(path, Empty(), &label).ok());
  EXPECT_EQ(Read(path), ToJson(label));
  Empty empty;
  Label read;
  ASSERT_TRUE(ReadJsonFile(path, &empty, &read).ok());
  EXPECT_EQ(read.count(), 3);
}

TEST(JsonAppendedFieldsTest, AFieldNamedLikeTheMessagesIsRefused) {
  Named named;
  Label label;
  absl::Status status = ParseJsonWithAppendedFields("{\"name\": \"a\"}", &named, &label);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(status.message(), "Label.name")) << status;
}

// However the text is cut into pieces (one byte at a time, in pieces
// shorter and longer than the held-back end), the result is the same.
TEST(JsonAppendedFieldsTest, TheSinkGivesOneTextWhateverThePieces) {
  const std::string object = ToJson(LongHolder());
  const std::string appended = ToJson(MakeLabel());
  std::string expected;
  {
    const ByteSink whole = [&expected](absl::string_view bytes) {
      expected.append(bytes.data(), bytes.size());
      return absl::OkStatus();
    };
    AppendingJsonSink sink(appended, whole);
    ASSERT_TRUE(sink.Write(object).ok());
    ASSERT_TRUE(sink.Finish().ok());
  }
  for (const size_t piece : {size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{4096}}) {
    std::string out;
    const ByteSink collect = [&out](absl::string_view bytes) {
      out.append(bytes.data(), bytes.size());
      return absl::OkStatus();
    };
    AppendingJsonSink sink(appended, collect);
    for (size_t at = 0; at < object.size(); at += piece) {
      ASSERT_TRUE(sink.Write(absl::string_view(object).substr(at, piece)).ok());
    }
    ASSERT_TRUE(sink.Finish().ok());
    EXPECT_EQ(out, expected) << "pieces of " << piece;
  }
}

TEST(JsonAppendedFieldsTest, TheSinkRefusesTextThatIsNotOneObject) {
  std::string out;
  const ByteSink sink = [&out](absl::string_view bytes) {
    out.append(bytes.data(), bytes.size());
    return absl::OkStatus();
  };
  AppendingJsonSink appending(ToJson(MakeLabel()), sink);
  ASSERT_TRUE(appending.Write("[1, 2]\n").ok());
  EXPECT_EQ(appending.Finish().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace receipt_parity
