#include "trainer/config_loader.h"

#include <filesystem>
#include <utility>
#include <vector>

#include <c10/util/hash.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/empty.pb.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "io/atomic_file.h"
#include "plugins/plugin_library.h"

namespace receipt_parity {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::TextFormat;

// Collects parser errors as "NAME:LINE:COLUMN: message" (1-based).
class LocatedErrors : public google::protobuf::io::ErrorCollector {
 public:
  explicit LocatedErrors(std::string name) : name_(std::move(name)) {}
  void AddError(int line, int column, const std::string& message) override {
    errors_.push_back(
        absl::StrCat(name_, ":", line + 1, ":", column + 1, ": ", message));
  }
  void AddWarning(int, int, const std::string&) override {}
  std::string Joined() const { return absl::StrJoin(errors_, "\n"); }

 private:
  std::string name_;
  std::vector<std::string> errors_;
};

// First pass: plugin options of types this binary does not know yet (they
// live in a plugin library not loaded yet) parse as an empty message.
class LenientAnyFinder : public TextFormat::Finder {
 public:
  const Descriptor* FindAnyType(const google::protobuf::Message& message,
                                const std::string& prefix,
                                const std::string& name) const override {
    const Descriptor* known = TextFormat::Finder::FindAnyType(message, prefix, name);
    return known != nullptr ? known : google::protobuf::Empty::descriptor();
  }
};

absl::StatusOr<LoadedConfig> Parse(const std::string& text,
                                   const std::string& name) {
  LoadedConfig loaded;
  auto tree = std::make_unique<ConfigLocator::ParseInfoTree>();
  LocatedErrors errors(name);
  TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(tree.get());
  if (!parser.ParseFromString(text, &loaded.config)) {
    return absl::InvalidArgumentError(errors.Joined());
  }
  loaded.locator = std::make_shared<ConfigLocator>(name, std::move(tree));
  ApplyDefaults(&loaded.config);
  if (absl::Status s = ValidateConfig(loaded.config); !s.ok()) {
    return loaded.locator->Locate(s);
  }
  return loaded;
}

absl::Status Invalid(const std::string& field, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

absl::Status ValidateBatches(const TrainingConfig& c) {
  if (c.world_size() < 1) {
    return Invalid("world_size", absl::StrCat("must be >= 1, got ", c.world_size()));
  }
  if (c.global_batch() < 1) {
    return Invalid("global_batch",
                   absl::StrCat("must be >= 1, got ", c.global_batch()));
  }
  if (c.local_batch_sizes_size() == 0) {
    if (c.global_batch() % c.world_size() != 0) {
      return Invalid("global_batch",
                     absl::StrCat(c.global_batch(), " slots do not split evenly over ",
                                  c.world_size(),
                                  " ranks; set local_batch_sizes for an uneven split"));
    }
    return absl::OkStatus();
  }
  if (c.local_batch_sizes_size() != c.world_size()) {
    return Invalid("local_batch_sizes",
                   absl::StrCat("has ", c.local_batch_sizes_size(),
                                " entries for world_size ", c.world_size()));
  }
  int sum = 0;
  for (int i = 0; i < c.local_batch_sizes_size(); ++i) {
    if (c.local_batch_sizes(i) < 0) {
      return Invalid(absl::StrCat("local_batch_sizes[", i, "]"),
                     absl::StrCat("must be >= 0, got ", c.local_batch_sizes(i)));
    }
    sum += c.local_batch_sizes(i);
  }
  if (sum != c.global_batch()) {
    return Invalid("local_batch_sizes",
                   absl::StrCat("add up to ", sum, ", not global_batch ",
                                c.global_batch()));
  }
  return absl::OkStatus();
}

absl::Status ValidateOptimizer(const OptimizerConfig& o) {
  switch (o.kind_case()) {
    case OptimizerConfig::kSgd:
      if (o.sgd().learning_rate() <= 0) {
        return Invalid("optimizer.sgd.learning_rate", "must be > 0");
      }
      if (o.sgd().momentum() < 0 || o.sgd().momentum() >= 1) {
        return Invalid("optimizer.sgd.momentum", "must be in [0, 1)");
      }
      if (o.sgd().weight_decay() < 0) {
        return Invalid("optimizer.sgd.weight_decay", "must be >= 0");
      }
      return absl::OkStatus();
    case OptimizerConfig::kAdamw:
      if (o.adamw().learning_rate() <= 0) {
        return Invalid("optimizer.adamw.learning_rate", "must be > 0");
      }
      if (o.adamw().weight_decay() < 0) {
        return Invalid("optimizer.adamw.weight_decay", "must be >= 0");
      }
      return absl::OkStatus();
    case OptimizerConfig::KIND_NOT_SET:
      break;
  }
  return Invalid("optimizer", "choose sgd { ... } or adamw { ... }");
}

}  // namespace

ConfigLocator::ConfigLocator(std::string path,
                             std::unique_ptr<ParseInfoTree> parse_info)
    : path_(std::move(path)), parse_info_(std::move(parse_info)) {}

std::string ConfigLocator::Where(const std::string& field_path) const {
  const Descriptor* descriptor = TrainingConfig::descriptor();
  const ParseInfoTree* tree = parse_info_.get();
  std::vector<std::string> parts = absl::StrSplit(field_path, '.');
  for (size_t i = 0; i < parts.size() && tree != nullptr; ++i) {
    std::string name = parts[i];
    int index = -1;
    if (size_t bracket = name.find('['); bracket != std::string::npos) {
      if (!absl::SimpleAtoi(name.substr(bracket + 1, name.size() - bracket - 2),
                            &index)) {
        break;
      }
      name = name.substr(0, bracket);
    }
    const FieldDescriptor* field =
        descriptor == nullptr ? nullptr : descriptor->FindFieldByName(name);
    if (field == nullptr) break;
    if (field->is_repeated() && index < 0) index = 0;
    if (i + 1 == parts.size() ||
        field->type() != FieldDescriptor::TYPE_MESSAGE) {
      TextFormat::ParseLocation at = tree->GetLocation(field, index);
      if (at.line < 0) break;
      return absl::StrCat(path_, ":", at.line + 1, ":", at.column + 1);
    }
    tree = tree->GetTreeForNested(field, index);
    descriptor = field->message_type();
  }
  return path_;
}

absl::Status ConfigLocator::Locate(const absl::Status& status) const {
  if (status.ok()) return status;
  const std::string message(status.message());
  const size_t colon = message.find(": ");
  std::string where = path_;
  if (colon != std::string::npos &&
      message.find(' ') == colon + 1) {  // "<field path>: ..."
    where = Where(message.substr(0, colon));
  }
  return absl::Status(status.code(), absl::StrCat(where, ": ", message));
}

absl::StatusOr<LoadedConfig> LoadTrainingConfig(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();

  // Step 1: plugin libraries first.
  TrainingConfig first_pass;
  LenientAnyFinder lenient;
  LocatedErrors errors(path);
  TextFormat::Parser parser;
  parser.SetFinder(&lenient);
  parser.AllowUnknownField(true);
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(*text, &first_pass)) {
    return absl::InvalidArgumentError(errors.Joined());
  }
  const std::filesystem::path folder =
      std::filesystem::path(path).parent_path();
  for (const std::string& library : first_pass.plugin_library()) {
    std::filesystem::path resolved(library);
    if (resolved.is_relative() && !std::filesystem::exists(resolved)) {
      resolved = folder / resolved;
    }
    absl::StatusOr<std::vector<std::string>> added =
        LoadPluginLibrary(resolved.string());
    if (!added.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": plugin_library: ", added.status().message()));
    }
  }
  // Steps 2-4.
  return Parse(*text, path);
}

absl::StatusOr<LoadedConfig> ParseTrainingConfig(const std::string& text,
                                                 const std::string& name) {
  return Parse(text, name);
}

void ApplyDefaults(TrainingConfig* c) {
  if (c->precision().empty()) c->set_precision("fp32");
  if (c->backend().empty()) c->set_backend("gloo");
  if (c->world_size() == 0) c->set_world_size(1);
  if (c->epochs() == 0) c->set_epochs(1);
  DataConfig* data = c->mutable_data();
  if (data->image_size() == 0) data->set_image_size(32);
  if (data->views_per_identity() == 0) data->set_views_per_identity(1);
  if (c->sampler().name().empty()) c->mutable_sampler()->set_name("masked_tail");
  if (c->loss_weighting().name().empty()) {
    c->mutable_loss_weighting()->set_name("global_count");
  }
  if (c->reducer().name().empty()) c->mutable_reducer()->set_name("allreduce_sum");
  if (c->metric_dedup().name().empty()) {
    c->mutable_metric_dedup()->set_name("by_receipt_id");
  }
  if (c->parity().rtol() == 0) c->mutable_parity()->set_rtol(1e-6);
  if (c->parity().atol() == 0) c->mutable_parity()->set_atol(1e-7);
  if (c->checkpoint().keep_last() == 0) c->mutable_checkpoint()->set_keep_last(2);
  RunOptions* run = c->mutable_run();
  if (run->log_every_updates() == 0) run->set_log_every_updates(10);
  if (run->collective_timeout_seconds() == 0) run->set_collective_timeout_seconds(60);
  if (run->intra_op_threads() == 0) run->set_intra_op_threads(1);
  if (run->master_addr().empty()) run->set_master_addr("127.0.0.1");
}

absl::Status ValidateConfig(const TrainingConfig& c) {
  if (c.precision() != "fp32") {
    return Invalid("precision", absl::StrCat("only fp32 is supported for now, got '",
                                             c.precision(), "'"));
  }
  if (c.backend() == "nccl") {
    return Invalid("backend",
                   "nccl needs a CUDA build of LibTorch with NCCL; this build "
                   "(Debian's LibTorch) is CPU-only: use gloo");
  }
  if (c.backend() != "gloo") {
    return Invalid("backend", absl::StrCat("unknown '", c.backend(),
                                           "'; known: gloo, nccl"));
  }
  if (absl::Status s = ValidateBatches(c); !s.ok()) return s;
  if (c.epochs() < 1) return Invalid("epochs", "must be >= 1");
  if (!c.has_model() || c.model().architecture().empty()) {
    return Invalid("model.architecture", "missing; choose cnn, mlp or linear");
  }
  if (absl::Status s = ValidateOptimizer(c.optimizer()); !s.ok()) return s;
  if (c.data().source_case() == DataConfig::SOURCE_NOT_SET) {
    return Invalid("data", "set synthetic { ... } or manifest_path");
  }
  if (c.parity().rtol() < 0 || c.parity().atol() < 0) {
    return Invalid("parity", "rtol and atol must be >= 0");
  }
  if (c.checkpoint().every_updates() < 0) {
    return Invalid("checkpoint.every_updates", "must be >= 0");
  }
  if (c.checkpoint().keep_last() < 1) {
    return Invalid("checkpoint.keep_last", "must be >= 1");
  }
  const RunOptions& run = c.run();
  if (run.collective_timeout_seconds() < 1) {
    return Invalid("run.collective_timeout_seconds", "must be >= 1");
  }
  if (run.intra_op_threads() < 1) {
    return Invalid("run.intra_op_threads", "must be >= 1");
  }
  if (run.max_updates() < 0) return Invalid("run.max_updates", "must be >= 0");
  if (!run.fault().kill_point().empty() &&
      (run.fault().kill_rank() < 0 || run.fault().kill_rank() >= c.world_size())) {
    return Invalid("run.fault.kill_rank",
                   absl::StrCat("rank ", run.fault().kill_rank(),
                                " does not exist with world_size ", c.world_size()));
  }
  return absl::OkStatus();
}

std::vector<int> LocalBatchSizes(const TrainingConfig& c) {
  if (c.local_batch_sizes_size() > 0) {
    return {c.local_batch_sizes().begin(), c.local_batch_sizes().end()};
  }
  return std::vector<int>(c.world_size(), c.global_batch() / c.world_size());
}

std::string ConfigFingerprint(const TrainingConfig& config) {
  TrainingConfig canonical = config;
  canonical.clear_run();
  canonical.clear_plugin_library();
  canonical.clear_checkpoint();
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.SetSerializationDeterministic(true);
    canonical.SerializeToCodedStream(&out);
  }
  return c10::sha1(bytes).str();
}

TrainingConfig ReferenceConfig(const TrainingConfig& config) {
  TrainingConfig reference = config;
  reference.set_world_size(1);
  reference.clear_local_batch_sizes();
  reference.mutable_checkpoint()->set_every_updates(0);
  reference.mutable_run()->clear_fault();
  return reference;
}

}  // namespace receipt_parity
