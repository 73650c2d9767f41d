#include "config/config_overrides.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/message.h"
#include "google/protobuf/text_format.h"
#include "config/plugin_kinds.h"
#include "google/protobuf/any.pb.h"
#include "plugins/plugin_registry.h"

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

bool Opens(const std::string& symbol) { return symbol == "[" || symbol == "{" || symbol == "<"; }
bool Closes(const std::string& symbol) { return symbol == "]" || symbol == "}" || symbol == ">"; }

// The text after the first value of `value` as the text format writes one
// (a number, an identifier, adjacent strings, a [list] or a {message}),
// from its next token on; "" when nothing follows.
std::string AfterFirstValue(const std::string& value) {
  google::protobuf::io::ArrayInputStream input(value.data(), static_cast<int>(value.size()));
  FirstError errors;
  google::protobuf::io::Tokenizer tokens(&input, &errors);
  using Token = google::protobuf::io::Tokenizer;
  if (!tokens.Next()) return "";
  if (tokens.current().text == "-" && !tokens.Next()) return "";
  int depth = 0;
  bool string_run = false;
  do {
    const Token::Token& t = tokens.current();
    const bool symbol = t.type == Token::TYPE_SYMBOL;
    if (depth == 0 && string_run && t.type != Token::TYPE_STRING) {
      return t.line == 0 ? value.substr(t.column) : t.text;
    }
    if (symbol && Opens(t.text)) ++depth;
    if (symbol && Closes(t.text)) --depth;
    string_run = depth == 0 && t.type == Token::TYPE_STRING;
    if (depth == 0 && !string_run) {
      if (!tokens.Next()) return "";
      const Token::Token& next = tokens.current();
      return next.line == 0 ? value.substr(next.column) : next.text;
    }
  } while (tokens.Next());
  return "";
}

// `value` (`o`'s, a bare string quoted) is one value: text after it
// (--set 'epochs=2 world_size: 3') would set other fields behind the
// override's back, and be recorded as if it did not.
absl::Status RequireOneValue(const ConfigOverride& o, const std::string& value,
                             const FieldDescriptor& field, const std::string& prefix) {
  const std::string after = AfterFirstValue(value);
  if (after.empty()) return absl::OkStatus();
  return Refuse(o, absl::StrCat("the value of ", prefix, field.name(), " is followed by more ('",
                                after, "'): one --set sets one field to one value; give each "
                                "field its own --set"));
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
  if (absl::Status s = RequireOneValue(o, value, field, prefix); !s.ok()) return s;
  parent->GetReflection()->ClearField(parent, &field);
  parent->MergeFrom(*scratch);
  return absl::OkStatus();
}

bool IsAny(const FieldDescriptor& field) {
  return field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !field.is_repeated() &&
         field.message_type()->full_name() == google::protobuf::Any::descriptor()->full_name();
}

// The registry kind whose selection is the config's field `top` (a row of
// config/plugin_kinds.h, or the optimizer's and the model's own forms); ""
// for a field that selects no plugin.
std::string KindOfField(const std::string& top) {
  for (const PluginKind& kind : PluginKinds()) {
    if (top == kind.config_field) return kind.kind;
  }
  if (top == "optimizer" || top == "model") return top;
  return "";
}

// An empty message of the type `options` (an Any in `holder`, which the
// config's field `top` holds) takes: the type its type_url names, or, when
// it holds nothing yet, the options type of the plugin `holder` names (its
// `name`, or the kind's default).
absl::StatusOr<std::unique_ptr<Message>> EmptyOptions(const ConfigOverride& o,
                                                      const std::string& where,
                                                      const std::string& top,
                                                      const Message& holder,
                                                      const google::protobuf::Any& options) {
  if (!options.type_url().empty()) {
    const std::string type = options.type_url().substr(options.type_url().rfind('/') + 1);
    const Descriptor* descriptor =
        google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(type);
    if (descriptor == nullptr) {
      return Refuse(o, absl::StrCat(where, " holds options of type ", type,
                                    ", which no loaded plugin defines"));
    }
    return std::unique_ptr<Message>(
        google::protobuf::MessageFactory::generated_factory()->GetPrototype(descriptor)->New());
  }
  const std::string kind = KindOfField(top);
  const FieldDescriptor* name_field = holder.GetDescriptor()->FindFieldByName("name");
  std::string name =
      name_field == nullptr ? "" : holder.GetReflection()->GetString(holder, name_field);
  if (name.empty() && !kind.empty() && kind != "optimizer" && kind != "model") {
    name = FindPluginKind(kind).default_name;
  }
  if (kind.empty() || name.empty()) {
    return Refuse(o, absl::StrCat(where, " names no plugin whose options it could hold: set ",
                                  absl::StripSuffix(where, ".options"), ".name first"));
  }
  absl::StatusOr<FactoryBase*> factory = plugin_registry_internal::Find(kind.c_str(), name);
  if (!factory.ok()) return Refuse(o, std::string(factory.status().message()));
  return (*factory)->CreateEmptyOptions();
}

absl::Status ApplyPath(const ConfigOverride& o, const std::vector<std::string>& parts,
                       size_t first, const std::string& where_prefix, Message* message);

// The rest of the path (from `next`) inside the plugin options `field` of
// `holder`: unpacked into its registered type, changed there, packed back.
absl::Status ApplyInsideOptions(const ConfigOverride& o, const std::vector<std::string>& parts,
                                size_t next, const FieldDescriptor& field,
                                const std::string& prefix, Message* holder) {
  auto* any = static_cast<google::protobuf::Any*>(
      holder->GetReflection()->MutableMessage(holder, &field));
  const std::string where = absl::StrCat(prefix, field.name());
  absl::StatusOr<std::unique_ptr<Message>> options =
      EmptyOptions(o, where, parts[0], *holder, *any);
  if (!options.ok()) return options.status();
  if (!any->type_url().empty() && !any->UnpackTo(options->get())) {
    return Refuse(o, absl::StrCat(where, " does not unpack as ",
                                  (*options)->GetDescriptor()->full_name()));
  }
  const std::string inner =
      absl::StrCat(where, " (", (*options)->GetDescriptor()->full_name(), ").");
  if (absl::Status s = ApplyPath(o, parts, next, inner, options->get()); !s.ok()) return s;
  any->PackFrom(**options);
  return absl::OkStatus();
}

// Walks `parts` from `first` inside `message`, whose path so far is
// `prefix` ("optimizer.sgd."), and sets the last part's field.
absl::Status ApplyPath(const ConfigOverride& o, const std::vector<std::string>& parts,
                       size_t first, const std::string& where_prefix, Message* message) {
  std::string prefix = where_prefix;
  for (size_t i = first; i < parts.size(); ++i) {
    const Descriptor& type = *message->GetDescriptor();
    const FieldDescriptor* field = type.FindFieldByName(parts[i]);
    if (field == nullptr) {
      const std::string where =
          prefix.empty() ? "the config" : std::string(absl::StripSuffix(prefix, "."));
      return Refuse(o, absl::StrCat("no field '", parts[i], "' in ", where, "; close names: ",
                                    absl::StrJoin(CloseNames(type, parts[i]), ", ")));
    }
    if (i + 1 == parts.size()) return SetField(o, *field, prefix, message);
    if (IsAny(*field)) return ApplyInsideOptions(o, parts, i + 1, *field, prefix, message);
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

// The short form's option names inside the plugin form's options
// ("learning_rate" is "lr"), for the optimizers that have both forms.
std::string PluginOptionOf(const std::string& short_form_option) {
  return short_form_option == "learning_rate" ? "lr" : short_form_option;
}

// Whether `parts` is a field of the model's architecture form
// (model.conv_channels) on a config whose model is a built-in architecture
// written in the plugin form, whose options hold the same field.
bool IsArchitectureFieldOfPluginForm(const std::vector<std::string>& parts,
                                     const TrainingConfig& config) {
  static const auto* const kArchitectures = new std::set<std::string>{"cnn", "mlp", "linear"};
  static const auto* const kFields =
      new std::set<std::string>{"conv_channels", "hidden_units", "dropout", "batch_norm"};
  return parts.size() == 2 && parts[0] == "model" && config.model().has_name() &&
         kArchitectures->count(config.model().name()) > 0 && kFields->count(parts[1]) > 0;
}

// `o`'s path, or, for a path through a short form on a config that writes
// the same thing in the plugin form, the same option inside its options:
// optimizer.sgd.X or optimizer.adamw.X where the optimizer is selected by
// that name (learning_rate is options.lr), model.X where the model is a
// built-in architecture selected by name. The short forms are the plugin
// form's aliases, so an override written for one sets the other. An AdamW
// beta or eps of 0 (the short form's default) is refused there: in the
// plugin form 0 means 0.
absl::StatusOr<std::vector<std::string>> PathThroughAlias(const ConfigOverride& o,
                                                          const TrainingConfig& config) {
  std::vector<std::string> parts = absl::StrSplit(o.field_path, '.');
  if (IsArchitectureFieldOfPluginForm(parts, config)) {
    return std::vector<std::string>{"model", "options", parts[1]};
  }
  const OptimizerConfig& optimizer = config.optimizer();
  if (parts.size() != 3 || parts[0] != "optimizer" || optimizer.name() != parts[1] ||
      (parts[1] != "sgd" && parts[1] != "adamw")) {
    return parts;
  }
  if (parts[1] == "adamw" && (parts[2] == "beta1" || parts[2] == "beta2" || parts[2] == "eps")) {
    double value = 0;
    if (absl::SimpleAtod(o.value, &value) && value == 0) {
      return Refuse(o, absl::StrCat("optimizer selects adamw by name, where ", parts[2],
                                    " 0 means 0, not the default: write optimizer.options.",
                                    parts[2], " with the value meant"));
    }
  }
  return std::vector<std::string>{"optimizer", "options", PluginOptionOf(parts[2])};
}

absl::Status ApplyOne(const ConfigOverride& o, TrainingConfig* config) {
  absl::StatusOr<std::vector<std::string>> parts = PathThroughAlias(o, *config);
  if (!parts.ok()) return parts.status();
  return ApplyPath(o, *parts, 0, "", config);
}

}  // namespace

absl::StatusOr<std::vector<ConfigOverride>> ParseConfigOverrides(
    const std::vector<std::string>& given) {
  std::vector<ConfigOverride> overrides;
  for (const std::string& text : given) {
    const size_t equals = text.find('=');
    if (equals == std::string::npos || equals == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--set ", text, ": expected FIELD_PATH=VALUE, e.g. --set optimizer.options.lr=0.1"));
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
