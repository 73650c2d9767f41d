#include "io/json_appended_fields.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/type.pb.h"
#include "google/protobuf/unknown_field_set.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/type_resolver.h"
#include "google/protobuf/util/type_resolver_util.h"

namespace receipt_parity {
namespace {

using google::protobuf::Message;
using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;
using google::protobuf::util::TypeResolver;

constexpr char kUrlPrefix[] = "type.googleapis.com";
// The appended message's field N is field kAppendedFieldBase + N of the
// combined type: above any field number of a message of this project, and
// below protobuf's largest (2^29 - 1).
constexpr int kAppendedFieldBase = 1 << 28;
constexpr absl::string_view kObjectEnd = "\n}\n";

std::string TypeUrl(const Message& message) {
  return absl::StrCat(kUrlPrefix, "/", message.GetDescriptor()->full_name());
}

// The fields of `json` (one object printed by protobuf) without its braces;
// empty for an object without fields.
absl::string_view FieldsOf(absl::string_view json) {
  if (json == "{}\n") return "";
  absl::ConsumePrefix(&json, "{\n");
  absl::ConsumeSuffix(&json, kObjectEnd);
  return json;
}

// The generated pool's types, with `appended`'s fields added to the root
// type's, renumbered above kAppendedFieldBase.
class AppendingTypeResolver : public TypeResolver {
 public:
  AppendingTypeResolver(std::string root_url, std::string appended_url)
      : pool_(google::protobuf::util::NewTypeResolverForDescriptorPool(
            kUrlPrefix, google::protobuf::DescriptorPool::generated_pool())),
        root_url_(std::move(root_url)),
        appended_url_(std::move(appended_url)) {}

  google::protobuf::util::Status ResolveMessageType(
      const std::string& type_url, google::protobuf::Type* type) override {
    google::protobuf::util::Status status = pool_->ResolveMessageType(type_url, type);
    if (!status.ok() || type_url != root_url_) return status;
    google::protobuf::Type appended;
    status = pool_->ResolveMessageType(appended_url_, &appended);
    if (!status.ok()) return status;
    for (google::protobuf::Field field : appended.fields()) {
      field.set_number(kAppendedFieldBase + field.number());
      *type->add_fields() = std::move(field);
    }
    return status;
  }

  google::protobuf::util::Status ResolveEnumType(const std::string& type_url,
                                                 google::protobuf::Enum* type) override {
    return pool_->ResolveEnumType(type_url, type);
  }

 private:
  std::unique_ptr<TypeResolver> pool_;
  std::string root_url_;
  std::string appended_url_;
};

// Moves the unknown fields numbered above kAppendedFieldBase out of
// `message`, renumbered back, into `appended`.
absl::Status MoveAppendedFields(Message* message, Message* appended) {
  UnknownFieldSet* unknown = message->GetReflection()->MutableUnknownFields(message);
  UnknownFieldSet moved;
  for (int i = 0; i < unknown->field_count(); ++i) {
    const UnknownField& field = unknown->field(i);
    if (field.number() < kAppendedFieldBase) continue;
    const int number = field.number() - kAppendedFieldBase;
    switch (field.type()) {
      case UnknownField::TYPE_VARINT:
        moved.AddVarint(number, field.varint());
        break;
      case UnknownField::TYPE_FIXED32:
        moved.AddFixed32(number, field.fixed32());
        break;
      case UnknownField::TYPE_FIXED64:
        moved.AddFixed64(number, field.fixed64());
        break;
      case UnknownField::TYPE_LENGTH_DELIMITED:
        moved.AddLengthDelimited(number, field.length_delimited());
        break;
      case UnknownField::TYPE_GROUP:
        return absl::InvalidArgumentError("a group among the appended fields");
    }
  }
  for (int i = 0; i < moved.field_count(); ++i) {
    unknown->DeleteByNumber(kAppendedFieldBase + moved.field(i).number());
  }
  std::string bytes;
  if (!moved.SerializeToString(&bytes) || !appended->ParseFromString(bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the fields of ", appended->GetDescriptor()->name(), " do not parse"));
  }
  return absl::OkStatus();
}

}  // namespace

AppendingJsonSink::AppendingJsonSink(std::string appended_json, const ByteSink& next)
    : appended_fields_(FieldsOf(appended_json)), next_(next) {}


absl::Status AppendingJsonSink::Write(absl::string_view bytes) {
  if (bytes.size() < kObjectEnd.size()) {
    held_.append(bytes.data(), bytes.size());
    if (held_.size() <= kObjectEnd.size()) return absl::OkStatus();
    const size_t pass = held_.size() - kObjectEnd.size();
    passed_on_ += pass;
    absl::Status status = next_(absl::string_view(held_).substr(0, pass));
    held_.erase(0, pass);
    return status;
  }
  // A long piece (a whole array's text, say) is passed on where it is: what
  // was held, then all of it but its last bytes, which are held instead.
  if (!held_.empty()) {
    passed_on_ += held_.size();
    if (absl::Status s = next_(held_); !s.ok()) return s;
  }
  const size_t pass = bytes.size() - kObjectEnd.size();
  passed_on_ += pass;
  held_.assign(bytes.substr(pass).data(), kObjectEnd.size());
  return next_(bytes.substr(0, pass));
}

absl::Status AppendingJsonSink::Finish() {
  // Protobuf prints an object without fields as "{}\n".
  if (held_ == "{}\n" && passed_on_ == 0) {
    return next_(appended_fields_.empty() ? held_
                                          : absl::StrCat("{\n", appended_fields_, kObjectEnd));
  }
  if (held_ != kObjectEnd || passed_on_ == 0) {
    return absl::FailedPreconditionError(
        "the text before the appended fields is not one JSON object printed by protobuf");
  }
  if (appended_fields_.empty()) return next_(held_);
  return next_(absl::StrCat(",\n", appended_fields_, kObjectEnd));
}

absl::Status ParseJsonWithAppendedFields(absl::string_view json, Message* message,
                                         Message* appended) {
  for (int i = 0; i < appended->GetDescriptor()->field_count(); ++i) {
    const google::protobuf::FieldDescriptor& field = *appended->GetDescriptor()->field(i);
    if (field.is_repeated() ||
        field.cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE ||
        message->GetDescriptor()->FindFieldByName(field.name()) != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          appended->GetDescriptor()->name(), ".", field.name(),
          " cannot be appended to ", message->GetDescriptor()->name()));
    }
  }
  AppendingTypeResolver resolver(TypeUrl(*message), TypeUrl(*appended));
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  std::string binary;
  const google::protobuf::StringPiece text(json.data(), json.size());
  google::protobuf::util::Status parsed = google::protobuf::util::JsonToBinaryString(
      &resolver, TypeUrl(*message), text, &binary, options);
  if (!parsed.ok()) return absl::InvalidArgumentError(parsed.message().as_string());
  if (!message->ParseFromString(binary)) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a valid ", message->GetDescriptor()->name()));
  }
  return MoveAppendedFields(message, appended);
}

}  // namespace receipt_parity
