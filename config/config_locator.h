// Where each field of a training config file is written, and the parse
// errors of that file: what turns a field path ("data.manifest_path") into
// "FILE:LINE:COLUMN" for an error message (config/config_loader.h).
// Thread safety: a ConfigLocator is immutable after construction; its
// methods are safe to call concurrently. ParseErrors is not thread-safe.
#ifndef RECEIPT_PARITY_CONFIG_CONFIG_LOCATOR_H_
#define RECEIPT_PARITY_CONFIG_CONFIG_LOCATOR_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "config/config_overrides.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace receipt_parity {

// Where each field of a loaded config was written.
class ConfigLocator {
 public:
  using ParseInfoTree = google::protobuf::TextFormat::ParseInfoTree;
  // `parse_info` nullptr: a config built in code; Where() is `path` alone.
  // `overrides`: the --set overrides applied after the file was parsed
  // (config/config_overrides.h).
  ConfigLocator(std::string path, std::unique_ptr<ParseInfoTree> parse_info,
                std::vector<ConfigOverride> overrides = {});

  const std::string& path() const { return path_; }

  // "FILE:LINE:COLUMN" for a field path like "data.validation_fraction" or
  // "local_batch_sizes[1]"; for a field not written in the file (it has
  // its default), where the nearest message holding it is written ("FILE"
  // alone when none is); "--set PATH=VALUE" when the last
  // override that set the field, or a message holding it, did.
  std::string Where(const std::string& field_path) const;

  // A status whose message starts with "<field path>: " gets
  // "<Where(field path)>: " in front; others get "FILE: ". OK stays OK.
  absl::Status Locate(const absl::Status& status) const;

 private:
  std::string path_;
  std::unique_ptr<ParseInfoTree> parse_info_;
  std::vector<ConfigOverride> overrides_;
};

// Collects a text-format parser's errors as "NAME:LINE:COLUMN: message"
// (1-based; protobuf reports them 0-based).
class ParseErrors : public google::protobuf::io::ErrorCollector {
 public:
  explicit ParseErrors(std::string name) : name_(std::move(name)) {}
  void AddError(int line, int column, const std::string& message) override;
  void AddWarning(int, int, const std::string&) override {}
  // Every error so far, one a line.
  std::string Joined() const;

 private:
  std::string name_;
  std::vector<std::string> errors_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFIG_CONFIG_LOCATOR_H_
