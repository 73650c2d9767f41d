#include "io/json_file.h"

#include <algorithm>
#include <memory>
#include <type_traits>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/reflection.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/type_resolver_util.h"
#include "io/atomic_file.h"

namespace receipt_parity {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Arrays at least this long are printed apart (see ToJson's header note).
constexpr int kArrayPrintedApart = 1024;

// Protobuf's JSON of `message`; with `print_defaults` every field is
// printed (protobuf then builds the whole document in memory first).
std::string ProtobufJson(const Message& message, bool print_defaults) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = print_defaults;
  options.preserve_proto_field_names = true;
  // Protobuf maps iterate in a per-process random order; deterministic
  // serialization sorts them by key, so the same message always gives the
  // same bytes.
  std::string binary;
  {
    google::protobuf::io::StringOutputStream stream(&binary);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&out);
  }
  static google::protobuf::util::TypeResolver* const resolver =
      google::protobuf::util::NewTypeResolverForDescriptorPool(
          "type.googleapis.com", message.GetDescriptor()->file()->pool());
  std::string json;
  // Printing a valid message cannot fail.
  (void)google::protobuf::util::BinaryToJsonString(
      resolver,
      absl::StrCat("type.googleapis.com/", message.GetDescriptor()->full_name()),
      binary, &json, options);
  return json;
}

// One array printed apart: the element the skeleton holds in its place,
// as protobuf prints it, and a message of the container's type holding
// nothing but the array.
struct ArrayPrintedApart {
  std::string marker_text;
  std::unique_ptr<Message> alone;
};

// The array of `alone` (only that field set) as protobuf prints it at the
// top level: its JSON, and the part from its '[' to its ']'.
struct ArrayJson {
  std::string json;
  absl::string_view array;
};

ArrayJson PrintArrayAlone(const Message& alone) {
  ArrayJson printed;
  // No other field is set, so nothing but the array can be left out.
  printed.json = ProtobufJson(alone, /*print_defaults=*/false);
  const size_t open = printed.json.find('[');
  const size_t close = printed.json.rfind(']');
  if (open != std::string::npos && close != std::string::npos) {
    printed.array = absl::string_view(printed.json).substr(open, close - open + 1);
  }
  return printed;
}

template <typename T>
void AddValue(Message* message, const FieldDescriptor* field, T value) {
  if constexpr (std::is_same_v<T, float>) {
    message->GetReflection()->AddFloat(message, field, value);
  } else {
    message->GetReflection()->AddDouble(message, field, value);
  }
}

// Moves the array out of `container` into `apart` and leaves the i-th
// marker element in its place.
template <typename T>
void PrintApart(Message* container, const FieldDescriptor* field,
                std::vector<ArrayPrintedApart>* apart) {
  const T marker = static_cast<T>(1e30) * static_cast<T>(apart->size() + 1);
  ArrayPrintedApart printed;
  {
    std::unique_ptr<Message> marker_alone(container->New());
    AddValue(marker_alone.get(), field, marker);
    const ArrayJson marker_array = PrintArrayAlone(*marker_alone);
    printed.marker_text = std::string(absl::StripAsciiWhitespace(
        absl::StripSuffix(absl::StripPrefix(marker_array.array, "["), "]")));
  }
  printed.alone.reset(container->New());
  container->GetReflection()->SwapFields(container, printed.alone.get(), {field});
  AddValue(container, field, marker);
  apart->push_back(std::move(printed));
}

// Walks `message`, printing apart every long float or double array.
void MarkLongArrays(Message* message, std::vector<ArrayPrintedApart>* apart) {
  const Reflection* reflection = message->GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(*message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (!field->is_repeated()) {
        MarkLongArrays(reflection->MutableMessage(message, field), apart);
        continue;
      }
      for (int i = 0; i < reflection->FieldSize(*message, field); ++i) {
        MarkLongArrays(reflection->MutableRepeatedMessage(message, field, i), apart);
      }
      continue;
    }
    if (!field->is_repeated() ||
        reflection->FieldSize(*message, field) < kArrayPrintedApart) {
      continue;
    }
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
      PrintApart<float>(message, field, apart);
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
      PrintApart<double>(message, field, apart);
    }
  }
}

// Where `marker` stands alone on a line of `json` ("\n<spaces>marker\n"):
// its position, or npos unless it does so exactly once.
size_t OnlyPlace(const std::string& json, const std::string& marker) {
  size_t found = std::string::npos;
  for (size_t at = json.find(marker); at != std::string::npos;
       at = json.find(marker, at + 1)) {
    const size_t end = at + marker.size();
    if (at == 0 || json[at - 1] != ' ' || end >= json.size() || json[end] != '\n') {
      continue;
    }
    if (found != std::string::npos) return std::string::npos;
    found = at;
  }
  return found;
}

// Passes `text` to `sink` with `indent` added after each line break, in
// pieces of about 64 KiB.
absl::Status WriteIndented(absl::string_view text, const std::string& indent,
                           const ByteSink& sink) {
  constexpr size_t kPiece = 64 << 10;
  std::string piece;
  piece.reserve(kPiece + indent.size() + 1);
  for (char c : text) {
    piece.push_back(c);
    if (c == '\n') piece.append(indent);
    if (piece.size() >= kPiece) {
      if (absl::Status s = sink(piece); !s.ok()) return s;
      piece.clear();
    }
  }
  return sink(piece);
}

// Where an array printed apart goes in the skeleton: its one-element
// array's '[' and ']', and the indent to add to the array printed alone.
struct Place {
  size_t open;
  size_t close;
  std::string indent;
  const Message* alone;
};

// Empty when a marker is not found exactly once.
std::vector<Place> Places(const std::string& skeleton,
                          const std::vector<ArrayPrintedApart>& apart) {
  std::vector<Place> places;
  for (const ArrayPrintedApart& array : apart) {
    const size_t at = OnlyPlace(skeleton, array.marker_text);
    if (at == std::string::npos) return {};
    const size_t indent_here = at - (skeleton.rfind('\n', at) + 1);
    // At the top level the elements are one level in: 2 spaces.
    constexpr size_t kIndentAlone = 2;
    if (indent_here < kIndentAlone) return {};
    places.push_back({skeleton.rfind('[', at), skeleton.find(']', at),
                      std::string(indent_here - kIndentAlone, ' '),
                      array.alone.get()});
  }
  std::sort(places.begin(), places.end(),
            [](const Place& a, const Place& b) { return a.open < b.open; });
  return places;
}

// Passes `skeleton` to `sink` with each marker's one-element array replaced
// by its array, printed one at a time.
absl::Status WriteSpliced(const std::string& skeleton,
                          const std::vector<Place>& places, const ByteSink& sink) {
  size_t copied = 0;
  for (const Place& place : places) {
    if (absl::Status s = sink(absl::string_view(skeleton).substr(
            copied, place.open - copied));
        !s.ok()) {
      return s;
    }
    const ArrayJson printed = PrintArrayAlone(*place.alone);
    if (absl::Status s = WriteIndented(printed.array, place.indent, sink); !s.ok()) {
      return s;
    }
    copied = place.close + 1;
  }
  return sink(absl::string_view(skeleton).substr(copied));
}

// ToJson's text, passed to `sink` piece by piece.
absl::Status PrintJson(const Message& message, const ByteSink& sink,
                       int* arrays_printed_apart) {
  if (arrays_printed_apart != nullptr) *arrays_printed_apart = 0;
  std::unique_ptr<Message> skeleton(message.New());
  skeleton->CopyFrom(message);
  std::vector<ArrayPrintedApart> apart;
  MarkLongArrays(skeleton.get(), &apart);
  if (apart.empty()) return sink(ToJsonInOnePass(message));
  const std::string skeleton_json = ToJsonInOnePass(*skeleton);
  const std::vector<Place> places = Places(skeleton_json, apart);
  // A marker value that the message itself holds somewhere: print it whole.
  if (places.empty()) return sink(ToJsonInOnePass(message));
  if (arrays_printed_apart != nullptr) {
    *arrays_printed_apart = static_cast<int>(apart.size());
  }
  return WriteSpliced(skeleton_json, places, sink);
}

}  // namespace

std::string ToJsonInOnePass(const google::protobuf::Message& message) {
  return ProtobufJson(message, /*print_defaults=*/true);
}

std::string ToJson(const google::protobuf::Message& message,
                   int* arrays_printed_apart) {
  std::string json;
  // Appending to a string cannot fail.
  (void)PrintJson(
      message,
      [&json](absl::string_view bytes) {
        json.append(bytes.data(), bytes.size());
        return absl::OkStatus();
      },
      arrays_printed_apart);
  return json;
}

absl::Status WriteJsonFile(const std::string& path,
                           const google::protobuf::Message& message) {
  return WriteFileAtomicallyFrom(path, [&message](const ByteSink& sink) {
    return PrintJson(message, sink, /*arrays_printed_apart=*/nullptr);
  });
}

absl::Status ReadJsonFile(const std::string& path,
                          google::protobuf::Message* message) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status =
      google::protobuf::util::JsonStringToMessage(*text, message, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a valid ", message->GetDescriptor()->name(), ": ",
        status.message().as_string()));
  }
  return absl::OkStatus();
}

}  // namespace receipt_parity
