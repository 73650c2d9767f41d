// The model conformance suite (model/classifier_builder.h and
// model/classifier_interface.h), for a C++ model plugin (built in or a
// .so) or a TorchScript file (the torchscript plugin):
//
//   same start    two Build(spec) give bitwise the same parameters and
//                 buffers, under the same names and shapes;
//   shape         forward maps float [N, input_shape...] to float
//                 [N, num_classes] for N = 0, 1, 2 and 5 (eval mode), with
//                 finite logits on receipts in [0, 1] (the harness's own
//                 load check, model/logits_check.h, included);
//   deterministic the same bits from two eval forwards, and from two
//                 training forwards with the same update keys (unless the
//                 layer audit finds per-rank randomness, which it reports);
//   batch         an example's eval logits do not depend on the batch it is
//                 in (relative 1e-5);
//   gradients     every trainable parameter gets a finite gradient;
//   checkpoint    parameters and buffers, changed away from their initial
//                 values, round-trip through the checkpoint's own state and
//                 serialization (model/model_state.h,
//                 checkpoint/shard_state.h) into a new build, bitwise, and
//                 it then computes the same logits;
//   layer audit   what model/layer_audit.h finds, printed; a finding whose
//                 kind the team did not declare (allowed_findings) fails.
#ifndef RECEIPT_PARITY_CONFORMANCE_MODEL_CONFORMANCE_H_
#define RECEIPT_PARITY_CONFORMANCE_MODEL_CONFORMANCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "conformance/suite_report.h"
#include "plugins/plugin_selection.pb.h"

namespace receipt_parity {

struct ModelSuiteOptions {
  PluginSelection selection;
  std::vector<int64_t> input_shape = {1, 16, 16};
  int num_classes = 4;
  uint64_t init_seed = 7;
  // Layer audit finding kinds the model may have ("dropout", ...).
  std::vector<std::string> allowed_findings;
};

// Errors (not findings): the selection makes no model, or its Check(spec)
// refuses the suite's spec (its code and message, after "model.options: ").
absl::StatusOr<SuiteReport> RunModelSuite(const ModelSuiteOptions& options);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFORMANCE_MODEL_CONFORMANCE_H_
