#include "model/training_test_support.h"

#include <cstdio>
#include <filesystem>

#include <ATen/ATen.h>

#include "gtest/gtest.h"
#include "samplers/masked_tail.h"

namespace receipt_parity {

TinyTrainingSet MakeTinyTrainingSet(int n) {
  TinyTrainingSet set;
  const int pixels = kTinyImageSide * kTinyImageSide;
  set.examples.images = at::empty({n, 1, kTinyImageSide, kTinyImageSide}, at::kFloat);
  set.examples.labels = at::empty({n}, at::kLong);
  float* image = set.examples.images.data_ptr<float>();
  int64_t* label = set.examples.labels.data_ptr<int64_t>();
  set.class_counts.assign(kTinyClasses, 0);
  for (int i = 0; i < n; ++i) {
    for (int p = 0; p < pixels; ++p) {
      image[i * pixels + p] = static_cast<float>(((i * 7 + p * 3) % 11) / 10.0);
    }
    label[i] = i % kTinyClasses;
    set.labels.push_back(i % kTinyClasses);
    ++set.class_counts[i % kTinyClasses];
    char id[16];
    std::snprintf(id, sizeof(id), "r%03d", i);
    set.receipt_ids.push_back(id);
  }
  set.source = InMemoryExamples(set.examples);
  return set;
}

std::shared_ptr<Classifier> MakeTinyModel(uint64_t seed) {
  ModelConfig config;
  config.set_architecture("linear");
  absl::StatusOr<std::shared_ptr<Classifier>> model = BuildClassifier(
      config, {1, kTinyImageSide, kTinyImageSide}, kTinyClasses, seed);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *model : nullptr;
}

EpochPlan TinyPlan(int n, const std::vector<int>& local_batch, int epoch) {
  absl::StatusOr<std::unique_ptr<SamplerPolicy>> policy =
      MaskedTailFactory().Create(MaskedTailOptions());
  EXPECT_TRUE(policy.ok()) << policy.status();
  OrderRequest request;
  request.num_examples = n;
  request.world_size = static_cast<int>(local_batch.size());
  request.seed = 3;
  request.epoch = epoch;
  absl::StatusOr<EpochPlan> plan = BuildEpochPlan(**policy, request, local_batch);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

std::vector<at::Tensor> ParameterValues(const Classifier& model) {
  std::vector<at::Tensor> values;
  for (const auto& item : model.named_parameters()) {
    values.push_back(item.value().detach().clone());
  }
  return values;
}

std::string FreshTestFolder(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace receipt_parity
