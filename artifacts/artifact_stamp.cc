#include "artifacts/artifact_stamp.h"

#include "logging/glog.h"

namespace receipt_parity {
namespace {

using google::protobuf::FieldDescriptor;

const FieldDescriptor* Field(const google::protobuf::Descriptor& type, const char* name,
                             FieldDescriptor::CppType cpp_type) {
  const FieldDescriptor* field = type.FindFieldByName(name);
  return field != nullptr && !field->is_repeated() && field->cpp_type() == cpp_type
             ? field
             : nullptr;
}

}  // namespace

bool HasStampFields(const google::protobuf::Descriptor& type) {
  return Field(type, "config_fingerprint", FieldDescriptor::CPPTYPE_STRING) != nullptr &&
         Field(type, "attempt", FieldDescriptor::CPPTYPE_INT32) != nullptr;
}

void StampArtifact(const ArtifactStamp& stamp, google::protobuf::Message* message) {
  const google::protobuf::Descriptor& type = *message->GetDescriptor();
  CHECK(HasStampFields(type)) << type.full_name() << " has no artifact stamp fields";
  const google::protobuf::Reflection& reflection = *message->GetReflection();
  reflection.SetString(message,
                       Field(type, "config_fingerprint", FieldDescriptor::CPPTYPE_STRING),
                       stamp.config_fingerprint);
  reflection.SetInt32(message, Field(type, "attempt", FieldDescriptor::CPPTYPE_INT32),
                      stamp.attempt);
}

}  // namespace receipt_parity
