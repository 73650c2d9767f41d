// Test support for the training loop's parts: a tiny classifier, a tiny
// training set and the epoch plans over it, and a fresh folder per test.
#ifndef RECEIPT_PARITY_MODEL_TRAINING_TEST_SUPPORT_H_
#define RECEIPT_PARITY_MODEL_TRAINING_TEST_SUPPORT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "model/classifier.h"
#include "samplers/epoch_plan.h"
#include "data/example_source.h"
#include "data/receipt_tensors.h"

namespace receipt_parity {

inline constexpr int kTinyImageSide = 4;
inline constexpr int kTinyClasses = 4;

// `n` examples of [1, 4, 4] pixels, label i % 4, ids "r000", "r001", ...
// The same on every call.
struct TinyTrainingSet {
  ExampleTensors examples;
  // `examples` as the update step takes them (sharing their storage).
  InMemoryExamples source;
  std::vector<int> labels;
  std::vector<int64_t> class_counts;
  std::vector<std::string> receipt_ids;
};
TinyTrainingSet MakeTinyTrainingSet(int n);

// A "linear" classifier over [1, 4, 4] with 4 classes; the same initial
// parameters for the same seed.
std::shared_ptr<Classifier> MakeTinyModel(uint64_t seed = 7);

// The masked_tail plan of epoch `epoch` over `n` examples (sampler seed 3).
EpochPlan TinyPlan(int n, const std::vector<int>& local_batch, int epoch = 0);

// Detached copies of the parameters, in registration order.
std::vector<at::Tensor> ParameterValues(const Classifier& model);

// An empty folder under the test's temp dir.
std::string FreshTestFolder(const std::string& name);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_TRAINING_TEST_SUPPORT_H_
