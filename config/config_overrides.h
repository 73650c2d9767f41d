// Overrides on the command line: `train --set optimizer.sgd.learning_rate=0.1
// --set world_size=3 ...` (issue 30), applied to the parsed config file
// before its defaults and checks (config/config_loader.h), so an override
// is validated exactly as the file is and the fingerprint is the effective
// config's.
//
// An override is FIELD_PATH=VALUE. FIELD_PATH names a field of
// TrainingConfig by its text-format names, messages separated by dots
// ("data.synthetic.num_identities", "checkpoint", "model.conv_channels").
// VALUE is the field's value as the text format writes it: a number, a
// string ("cnn" or cnn), true/false, an enum name, a list for a repeated
// field ("[8, 16]"), or a message ("{ every_updates: 4 }", extension and
// Any fields included). The override replaces the field: a repeated field's
// list, a message's whole contents. Overrides apply in order; a later one
// replaces what an earlier one set.
//
// Refused (InvalidArgument, naming the override as given, "--set
// PATH=VALUE: ..."): no '=' or an empty path; a path part that is not a
// field (listing the closest names of that message); a path through a
// scalar or repeated field; a value the field's type does not parse (the
// text format parser's message); a field of a oneof whose other member
// the config sets ("conflicts with optimizer.sgd"; override the member it
// sets, or name the whole message: --set optimizer={ adamw { ... } }).
// Thread safety: pure functions.
#ifndef RECEIPT_PARITY_CONFIG_CONFIG_OVERRIDES_H_
#define RECEIPT_PARITY_CONFIG_CONFIG_OVERRIDES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/config.pb.h"

namespace receipt_parity {

struct ConfigOverride {
  std::string field_path;  // "optimizer.sgd.learning_rate"
  std::string value;       // "0.1"
  // As given: "optimizer.sgd.learning_rate=0.1".
  std::string text() const { return field_path + "=" + value; }
};

// Each "PATH=VALUE" split at its first '='; InvalidArgument for one
// without '=' or with an empty path.
absl::StatusOr<std::vector<ConfigOverride>> ParseConfigOverrides(
    const std::vector<std::string>& given);

// Applies `overrides` to `config` in order (see the file comment). On an
// error `config` may hold the overrides before the refused one.
absl::Status ApplyConfigOverrides(const std::vector<ConfigOverride>& overrides,
                                  TrainingConfig* config);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFIG_CONFIG_OVERRIDES_H_
