#include "config/config_overrides.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/message.h"
#include "google/protobuf/text_format.h"

namespace receipt_parity {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::TextFormat;

// Names listed when a path part is not a field.
constexpr size_t kCloseNames = 3;

// Levenshtein distance: how far a mistyped name is from a field's.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The fields of `message` closest to `name`, nearest first.
std::vector<std::string> CloseNames(const Descriptor& message, const std::string& name) {
  std::vector<std::pair<size_t, std::string>> ranked;
  for (int i = 0; i < message.field_count(); ++i) {
    const std::string& field = message.field(i)->name();
    ranked.emplace_back(EditDistance(name, field), field);
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> names;
  for (size_t i = 0; i < ranked.size() && i < kCloseNames; ++i) names.push_back(ranked[i].second);
  return names;
}

absl::Status Refuse(const ConfigOverride& o, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("--set ", o.text(), ": ", why));
}

// A member of `field`'s oneof other than `field` that `message` sets; null
// when none.
const FieldDescriptor* OtherOneofMember(const Message& message, const FieldDescriptor& field) {
  const auto* oneof = field.containing_oneof();
  if (oneof == nullptr) return nullptr;
  const FieldDescriptor* set = message.GetReflection()->GetOneofFieldDescriptor(message, oneof);
  return set == nullptr || set == &field ? nullptr : set;
}

// Collects the text format parser's errors, the first one kept.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, int column, const std::string& message) override {
    if (error_.empty()) error_ = absl::StrCat(message, " (at character ", column + 1, ")");
  }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

absl::Status OneofConflict(const ConfigOverride& o, const std::string& prefix,
                           const FieldDescriptor& field, const FieldDescriptor& other) {
  return Refuse(o, absl::StrCat("conflicts with ", prefix, other.name(),
                                ", which the config sets (one of ",
                                field.containing_oneof()->name(), "); override ", prefix,
                                other.name(), ", or the whole message that holds both"));
}

// `value` parsed as `field` of a fresh message of `field`'s containing
// type, then put in `parent` in place of what it held.
absl::Status SetField(const ConfigOverride& o, const FieldDescriptor& field,
                      const std::string& prefix, Message* parent) {
  if (const FieldDescriptor* other = OtherOneofMember(*parent, field); other != nullptr) {
    return OneofConflict(o, prefix, field, *other);
  }
  std::unique_ptr<Message> scratch(parent->New());
  FirstError errors;
  TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  // A string may be written bare (--set sampler.name=duplicate_pad).
  const bool bare_string = field.cpp_type() == FieldDescriptor::CPPTYPE_STRING &&
                           !field.is_repeated() && !absl::StartsWith(o.value, "\"") &&
                           !absl::StartsWith(o.value, "'");
  const std::string value =
      bare_string ? absl::StrCat("\"", absl::CEscape(o.value), "\"") : o.value;
  const std::string text = absl::StrCat(field.name(), ": ", value);
  if (!parser.ParseFromString(text, scratch.get())) {
    return Refuse(o, absl::StrCat("not a value of ", prefix, field.name(), ": ", errors.error()));
  }
  parent->GetReflection()->ClearField(parent, &field);
  parent->MergeFrom(*scratch);
  return absl::OkStatus();
}

absl::Status ApplyOne(const ConfigOverride& o, TrainingConfig* config) {
  Message* message = config;
  std::string prefix;  // "optimizer.sgd."
  const std::vector<std::string> parts = absl::StrSplit(o.field_path, '.');
  for (size_t i = 0; i < parts.size(); ++i) {
    const Descriptor& type = *message->GetDescriptor();
    const FieldDescriptor* field = type.FindFieldByName(parts[i]);
    if (field == nullptr) {
      const std::string where =
          prefix.empty() ? "the config" : std::string(absl::StripSuffix(prefix, "."));
      return Refuse(o, absl::StrCat("no field '", parts[i], "' in ", where, "; close names: ",
                                    absl::StrJoin(CloseNames(type, parts[i]), ", ")));
    }
    if (i + 1 == parts.size()) return SetField(o, *field, prefix, message);
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || field->is_repeated()) {
      return Refuse(o, absl::StrCat(prefix, field->name(), " is ",
                                    field->is_repeated() ? "repeated" : "not a message",
                                    ": set it whole (--set ", prefix, field->name(), "=...)"));
    }
    if (const FieldDescriptor* other = OtherOneofMember(*message, *field); other != nullptr) {
      return OneofConflict(o, prefix, *field, *other);
    }
    message = message->GetReflection()->MutableMessage(message, field);
    absl::StrAppend(&prefix, field->name(), ".");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<ConfigOverride>> ParseConfigOverrides(
    const std::vector<std::string>& given) {
  std::vector<ConfigOverride> overrides;
  for (const std::string& text : given) {
    const size_t equals = text.find('=');
    if (equals == std::string::npos || equals == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--set ", text, ": expected FIELD_PATH=VALUE, e.g. --set optimizer.sgd.learning_rate=0.1"));
    }
    overrides.push_back({text.substr(0, equals), text.substr(equals + 1)});
  }
  return overrides;
}

absl::Status ApplyConfigOverrides(const std::vector<ConfigOverride>& overrides,
                                  TrainingConfig* config) {
  for (const ConfigOverride& o : overrides) {
    if (absl::Status s = ApplyOne(o, config); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace receipt_parity
