// What the verify tests train on: 11 receipts whose keys say their index
// (100 i + 7), labels alternating over 2 classes, ids "r-0" .. "r-10", and
// one worker's inputs over them for a policy and a weighting (seed 5).
#ifndef RECEIPT_PARITY_VERIFY_ELEVEN_RECEIPTS_TEST_SUPPORT_H_
#define RECEIPT_PARITY_VERIFY_ELEVEN_RECEIPTS_TEST_SUPPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "data/example_source.h"
#include "verify/update_accounting.h"

namespace receipt_parity {

struct ElevenReceipts {
  static constexpr int64_t kCount = 11;
  static constexpr uint64_t kSeed = 5;

  ElevenReceipts() {
    ExampleTensors all;
    all.images = at::zeros({kCount, 1, 2, 2});
    all.labels = at::arange(kCount, at::kLong) % 2;
    all.keys = at::arange(kCount, at::kLong) * 100 + 7;
    examples = InMemoryExamples(all);
    for (int i = 0; i < kCount; ++i) {
      labels.push_back(i % 2);
      ids.push_back("r-" + std::to_string(i));
    }
    class_counts = {6, 5};
  }

  OneWorkerInputs OneWorker(const SamplerPolicy& policy, const LossWeighting& weighting) const {
    OneWorkerInputs in;
    in.policy = &policy;
    in.num_examples = kCount;
    in.seed = kSeed;
    in.weighting = &weighting;
    in.labels = &labels;
    in.class_counts = &class_counts;
    in.examples = &examples;
    return in;
  }

  InMemoryExamples examples;
  std::vector<int> labels;
  std::vector<std::string> ids;
  std::vector<int64_t> class_counts;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_VERIFY_ELEVEN_RECEIPTS_TEST_SUPPORT_H_
