#include "io/json_file.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <type_traits>
#include <vector>

#include "absl/cleanup/cleanup.h"
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
#include "io/json_appended_fields.h"
#include "io/json_splice.h"

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

// One part printed apart from the rest:
// - a long array: `alone` is a message of its container's type holding
//   nothing but the array, and `marker_text` the one element the skeleton
//   holds in its place, as protobuf prints it;
// - an element of a repeated message field that holds many array elements:
//   `alone` is the element, and `marker_text` the line ("\"epoch\":
//   -2000000000") of the field whose unique value marks the element left
//   in its place.
// `container`, `field` and `index` (the element's, or -1 for an array) say
// where it is put back.
struct PrintedApart {
  std::string marker_text;
  std::unique_ptr<Message> alone;
  bool whole_element = false;
  Message* container = nullptr;
  const FieldDescriptor* field = nullptr;
  int index = -1;
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
                std::vector<PrintedApart>* apart) {
  const T marker = static_cast<T>(1e30) * static_cast<T>(apart->size() + 1);
  PrintedApart printed;
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
  printed.container = container;
  printed.field = field;
  apart->push_back(std::move(printed));
}

// Values under `message`: each singular field set one, each array its
// length, nested messages theirs. With `read_maps` false a map that is not
// empty counts as kArrayPrintedApart values and its entries are not looked
// at: reading them through reflection makes protobuf build and keep a second
// copy of the whole map inside the message (11 MB on the first_step.json
// writer of a 250 000-parameter model), so the caller's own message is only
// counted so; the skeleton, a copy, is read whole.
int64_t ValuesUnder(const Message& message, bool read_maps) {
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  int64_t values = 0;
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
      values += field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    } else if (field->is_map() && !read_maps) {
      values += std::max<int64_t>(reflection->FieldSize(message, field), kArrayPrintedApart);
    } else if (!field->is_repeated()) {
      values += ValuesUnder(reflection->GetMessage(message, field), read_maps);
    } else {
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        values += ValuesUnder(reflection->GetRepeatedMessage(message, field, i), read_maps);
      }
    }
  }
  return values;
}

// Sets the first singular integer or string field of the empty `marker`
// to a value made from `i` that no real message is likely to hold; false
// when its type has no such field.
bool SetMarkerField(Message* marker, int64_t i) {
  const Reflection* reflection = marker->GetReflection();
  const google::protobuf::Descriptor* type = marker->GetDescriptor();
  for (int f = 0; f < type->field_count(); ++f) {
    const FieldDescriptor* field = type->field(f);
    if (field->is_repeated() || field->containing_oneof() != nullptr) continue;
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        reflection->SetInt32(marker, field, static_cast<int32_t>(-2000000000 - i % 100000000));
        return true;
      case FieldDescriptor::CPPTYPE_INT64:
        reflection->SetInt64(marker, field, -9000000000000000000 - i);
        return true;
      case FieldDescriptor::CPPTYPE_UINT32:
        reflection->SetUInt32(marker, field, static_cast<uint32_t>(4000000000u + i % 200000000));
        return true;
      case FieldDescriptor::CPPTYPE_UINT64:
        reflection->SetUInt64(marker, field, 18000000000000000000u + static_cast<uint64_t>(i));
        return true;
      case FieldDescriptor::CPPTYPE_STRING:
        reflection->SetString(marker, field, absl::StrCat("\x01printed apart ", i));
        return true;
      default:
        break;
    }
  }
  return false;
}

// Moves element `index` of the repeated message `field` out of `container`
// into `apart` and leaves a marker element in its place; false (nothing
// moved) when the element's type has no field to mark it with.
bool PrintElementApart(Message* container, const FieldDescriptor* field,
                       int index, std::vector<PrintedApart>* apart) {
  const Reflection* reflection = container->GetReflection();
  Message* element = reflection->MutableRepeatedMessage(container, field, index);
  PrintedApart printed;
  printed.whole_element = true;
  printed.alone.reset(element->New());
  if (!SetMarkerField(printed.alone.get(), static_cast<int64_t>(apart->size()))) {
    return false;
  }
  // The marker alone: "{\n \"field\": value\n}\n".
  printed.marker_text = std::string(absl::StripAsciiWhitespace(absl::StripSuffix(
      absl::StripPrefix(absl::StripAsciiWhitespace(
                            ProtobufJson(*printed.alone, /*print_defaults=*/false)),
                        "{"),
      "}")));
  element->GetReflection()->Swap(element, printed.alone.get());
  printed.container = container;
  printed.field = field;
  printed.index = index;
  apart->push_back(std::move(printed));
  return true;
}

// Puts every part back where it was taken from, markers out: the message
// is as it was before MarkLongArrays.
void PutBack(std::vector<PrintedApart>* apart) {
  for (auto part = apart->rbegin(); part != apart->rend(); ++part) {
    const Reflection* reflection = part->container->GetReflection();
    if (part->whole_element) {
      Message* element =
          reflection->MutableRepeatedMessage(part->container, part->field, part->index);
      element->GetReflection()->Swap(element, part->alone.get());
    } else {
      reflection->ClearField(part->container, part->field);
      reflection->SwapFields(part->container, part->alone.get(), {part->field});
    }
  }
  apart->clear();
}

// Whether a map field is set anywhere in `message` (found without reading a
// map's entries).
bool HoldsMap(const Message& message) {
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (field->is_map()) return true;
    if (!field->is_repeated()) {
      if (HoldsMap(reflection->GetMessage(message, field))) return true;
      continue;
    }
    for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
      if (HoldsMap(reflection->GetRepeatedMessage(message, field, i))) return true;
    }
  }
  return false;
}

// Walks `message`, printing apart every long float or double array and
// every element of a repeated message field (not a map) that holds many
// values.
void MarkLongArrays(Message* message, std::vector<PrintedApart>* apart) {
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
        Message* element = reflection->MutableRepeatedMessage(message, field, i);
        if (field->is_map() || ValuesUnder(*element, /*read_maps=*/true) < kArrayPrintedApart ||
            !PrintElementApart(message, field, i, apart)) {
          MarkLongArrays(element, apart);
        }
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

std::vector<SpliceMarker> Markers(const std::vector<PrintedApart>& apart) {
  std::vector<SpliceMarker> markers;
  markers.reserve(apart.size());
  for (const PrintedApart& part : apart) {
    markers.push_back({part.marker_text, part.whole_element});
  }
  return markers;
}

// A part printed apart, indented to its place.
absl::Status WritePart(const PrintedApart& part, const std::string& indent,
                       const ByteSink& sink) {
  if (!part.whole_element) {
    const ArrayJson printed = PrintArrayAlone(*part.alone);
    return WriteIndented(printed.array, indent, sink);
  }
  // Its long parts apart in turn; without the last line break.
  const std::string json = ToJson(*part.alone);
  return WriteIndented(absl::StripSuffix(json, "\n"), indent, sink);
}

// Passes `skeleton` to `sink` with each marker replaced by its part,
// printed one at a time.
absl::Status WriteSpliced(const std::string& skeleton,
                          const std::vector<SplicePlace>& places,
                          const std::vector<PrintedApart>& apart, const ByteSink& sink) {
  size_t copied = 0;
  for (const SplicePlace& place : places) {
    if (absl::Status s = sink(absl::string_view(skeleton).substr(
            copied, place.open - copied));
        !s.ok()) {
      return s;
    }
    if (absl::Status s = WritePart(apart[place.part], place.indent, sink); !s.ok()) {
      return s;
    }
    copied = place.close + 1;
  }
  return sink(absl::string_view(skeleton).substr(copied));
}

// ToJson's text of `message`, passed to `sink` piece by piece: its long
// parts are moved out, the rest printed with a marker in each one's place,
// the parts spliced in, and every part put back (`message` is left as it
// was, whatever `sink` returns). Where a marker cannot be placed, `whole` is
// printed in one pass: `message` itself, or the original it was copied from
// (parts put back inside a map's entries do not reach the map).
absl::Status PrintWithPartsApart(Message* message, const Message& whole,
                                 const ByteSink& sink, int* arrays_printed_apart) {
  std::vector<PrintedApart> apart;
  absl::Cleanup put_back = [&apart] { PutBack(&apart); };
  MarkLongArrays(message, &apart);
  if (apart.empty()) return sink(ToJsonInOnePass(*message));
  const std::string skeleton_json = ToJsonInOnePass(*message);
  const std::vector<SplicePlace> places = FindSplicePlaces(skeleton_json, Markers(apart));
  // A marker value that the message itself holds somewhere: print it whole.
  if (places.empty()) {
    PutBack(&apart);
    return sink(ToJsonInOnePass(whole));
  }
  if (arrays_printed_apart != nullptr) {
    *arrays_printed_apart = static_cast<int>(apart.size());
  }
  return WriteSpliced(skeleton_json, places, apart, sink);
}

// ToJson's text, passed to `sink` piece by piece; the parts are moved out
// of a copy of `message`.
absl::Status PrintJson(const Message& message, const ByteSink& sink,
                       int* arrays_printed_apart) {
  if (arrays_printed_apart != nullptr) *arrays_printed_apart = 0;
  // Too few values for any part to be printed apart: no copy to make.
  if (ValuesUnder(message, /*read_maps=*/false) < kArrayPrintedApart) {
    return sink(ToJsonInOnePass(message));
  }
  std::unique_ptr<Message> skeleton(message.New());
  skeleton->CopyFrom(message);
  return PrintWithPartsApart(skeleton.get(), message, sink, arrays_printed_apart);
}

// Writes the object that `print` passes to its sink into `path`
// atomically; with `appended`, its fields end the object.
absl::Status WriteJsonObject(const std::string& path, const Message* appended,
                             const std::function<absl::Status(const ByteSink&)>& print) {
  return WriteFileAtomicallyFrom(path, [&](const ByteSink& sink) {
    if (appended == nullptr) return print(sink);
    AppendingJsonSink appending(ToJsonInOnePass(*appended), sink);
    if (absl::Status s = print([&appending](absl::string_view bytes) {
          return appending.Write(bytes);
        });
        !s.ok()) {
      return s;
    }
    return appending.Finish();
  });
}

// Protobuf's strict parsing of `text` (unknown keys are errors).
absl::Status ParseJson(const std::string& text, Message* message, Message* appended) {
  if (appended != nullptr) return ParseJsonWithAppendedFields(text, message, appended);
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(text, message, options);
  return status.ok() ? absl::OkStatus()
                     : absl::InvalidArgumentError(status.message().as_string());
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
                           const google::protobuf::Message& message,
                           const google::protobuf::Message* appended) {
  return WriteJsonObject(path, appended, [&message](const ByteSink& sink) {
    return PrintJson(message, sink, /*arrays_printed_apart=*/nullptr);
  });
}

absl::Status WriteJsonFileInPlace(const std::string& path,
                                  google::protobuf::Message* message,
                                  const google::protobuf::Message* appended) {
  if (HoldsMap(*message)) return WriteJsonFile(path, *message, appended);
  // A message with nothing long is printed in one pass by the walk itself.
  return WriteJsonObject(path, appended, [message](const ByteSink& sink) {
    return PrintWithPartsApart(message, *message, sink, /*arrays_printed_apart=*/nullptr);
  });
}

absl::Status ReadJsonFile(const std::string& path,
                          google::protobuf::Message* message,
                          google::protobuf::Message* appended) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return ParseJsonFileText(path, *text, message, appended);
}

absl::Status ParseJsonFileText(const std::string& path, const std::string& text,
                               google::protobuf::Message* message,
                               google::protobuf::Message* appended) {
  const absl::Status parsed = ParseJson(text, message, appended);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a valid ", message->GetDescriptor()->name(), ": ", parsed.message()));
  }
  return absl::OkStatus();
}

}  // namespace receipt_parity
