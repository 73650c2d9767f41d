// The sampler policy conformance suite (samplers/sampler_policy.h):
//
//   coverage        every epoch's order trains each receipt as often as the
//                   policy declares (SamplerPolicy::epoch_coverage), over
//                   1 to 53 receipts, 1 to 4 ranks, local batches of 1 and
//                   4, two seeds and three epochs; every index in range;
//   deterministic   Order() gives the same order twice, and a new plugin
//                   made from the same options gives it too;
//   set_epoch       consecutive epochs give different orders (50 receipts);
//   every rank      three rank processes each build the epoch plan for
//                   their own rank: all three plans are the suite's, slot
//                   for slot;
//   world size      (when world_size_independent() says so) the same
//                   global order at 1, 2, 3 and 4 ranks for one global
//                   batch;
//   bad requests    num_examples < 0 and world_size < 1 are InvalidArgument.
#ifndef RECEIPT_PARITY_CONFORMANCE_SAMPLER_POLICY_CONFORMANCE_H_
#define RECEIPT_PARITY_CONFORMANCE_SAMPLER_POLICY_CONFORMANCE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "conformance/rank_processes.h"
#include "conformance/suite_report.h"
#include "plugins/plugin_selection.pb.h"

namespace receipt_parity {

struct SamplerSuiteOptions {
  PluginSelection selection;
  std::string work_folder;
  RankCommand rank_command;
};

absl::StatusOr<SuiteReport> RunSamplerPolicySuite(const SamplerSuiteOptions& options);

// One rank of the "every rank" scenario: builds its plan, writes it.
absl::Status RunSamplerPolicyRank(const SamplerSuiteOptions& options, const std::string& folder);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_CONFORMANCE_SAMPLER_POLICY_CONFORMANCE_H_
