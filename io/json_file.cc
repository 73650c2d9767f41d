#include "io/json_file.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/type_resolver_util.h"
#include "io/atomic_file.h"

namespace receipt_parity {

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
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

absl::Status WriteJsonFile(const std::string& path,
                           const google::protobuf::Message& message) {
  return WriteFileAtomically(path, ToJson(message));
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
