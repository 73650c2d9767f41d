#include "config/layer_policy.h"

#include <memory>
#include <string>

#include <ATen/ATen.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/linear.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/layer_audit.h"
#include "config/run_model.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A linear model, or with `batch_norm` the test plugin "test_batch_norm_cnn"
// (model/batch_norm_test_model.cc, linked in).
TrainingConfig SmallConfig(int world_size, const std::string& policy,
                           bool batch_norm = false) {
  TrainingConfig config;
  config.set_global_batch(4);
  config.set_world_size(world_size);
  if (batch_norm) {
    config.mutable_model()->set_name("test_batch_norm_cnn");
  } else {
    config.mutable_model()->set_architecture("linear");
  }
  config.mutable_optimizer()->mutable_sgd()->set_learning_rate(0.1);
  config.mutable_data()->mutable_synthetic()->set_num_identities(8);
  config.mutable_data()->set_image_size(8);
  if (!policy.empty()) config.mutable_parity()->set_batch_dependent_layers(policy);
  return config;
}

LoadedConfig Loaded(int world_size, const std::string& policy, bool batch_norm = false) {
  absl::StatusOr<LoadedConfig> loaded =
      ValidateTrainingConfig(SmallConfig(world_size, policy, batch_norm), "small");
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  return *loaded;
}

class WithBatchNorm : public Classifier {
 public:
  WithBatchNorm() {
    bn_ = register_module("bn", torch::nn::BatchNorm1d(64));
    out_ = register_module("out", torch::nn::Linear(64, 4));
  }
  at::Tensor forward(const at::Tensor& x) override {
    return out_->forward(bn_->forward(x.flatten(1)));
  }
  std::string Describe() const override { return "with_bn"; }

 private:
  torch::nn::BatchNorm1d bn_{nullptr};
  torch::nn::Linear out_{nullptr};
};

TEST(LayerPolicyTest, UnsetMeansReportAndOtherValuesAreAConfigError) {
  EXPECT_EQ(BatchDependentLayersPolicy(SmallConfig(2, "")), "report");
  EXPECT_EQ(BatchDependentLayersPolicy(SmallConfig(2, "refuse")), "refuse");
  absl::StatusOr<LoadedConfig> bad = ValidateTrainingConfig(SmallConfig(2, "ignore"), "small");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("parity.batch_dependent_layers: must be \"report\" or \"refuse\", "
                        "got \"ignore\""));
}

TEST(LayerPolicyTest, RefuseStopsAParityRunOfABatchNormModelNamingTheModule) {
  const absl::Status refused = CheckLayerPolicy(Loaded(2, "refuse", true));
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("parity.batch_dependent_layers: \"refuse\""));
  EXPECT_THAT(refused.message(), HasSubstr("bn (BatchNorm2d): batch norm in training mode"));
  // A one-worker config is its own reference: never refused.
  EXPECT_TRUE(CheckLayerPolicy(Loaded(1, "refuse", true)).ok());
  // "report" runs it, the finding reported.
  const LoadedConfig report = Loaded(2, "", true);
  absl::StatusOr<std::shared_ptr<Classifier>> model = report.model.Build();
  ASSERT_TRUE(model.ok());
  absl::StatusOr<LayerAudit> audit = AuditRunModel(report, **model, 2);
  ASSERT_TRUE(audit.ok()) << audit.status();
  EXPECT_EQ(audit->policy(), "report");
  ASSERT_EQ(audit->findings_size(), 1);
  EXPECT_EQ(audit->findings(0).module(), "bn");
}

TEST(LayerPolicyTest, RefuseAcceptsABuiltInModel) {
  EXPECT_TRUE(CheckLayerPolicy(Loaded(2, "refuse")).ok());
}

LayerAudit BatchNormAudit() {
  WithBatchNorm model;
  absl::StatusOr<LayerAudit> audit = AuditLayers(model);
  EXPECT_TRUE(audit.ok());
  return *audit;
}

TEST(LayerPolicyTest, AFailedParityWithBatchNormAndAnUnevenSplitSaysWhy) {
  ParityReport report;
  report.add_split(3);
  report.add_split(1);
  report.set_accepted_examples(4);
  report.add_failures("gradient of out.weight differs by up to 0.1");
  report.set_pass(false);
  ExplainParity(BatchNormAudit(), &report);
  EXPECT_EQ(report.audit().findings(0).module(), "bn");
  ASSERT_EQ(report.failures_size(), 2);
  EXPECT_THAT(report.failures(1), HasSubstr("bn (BatchNorm1d) is batch norm in training mode"));
  EXPECT_THAT(report.failures(1), HasSubstr("split 3+1, uneven"));
  EXPECT_THAT(report.failures(1), HasSubstr("whole update's 4 examples"));

  ParityReport passed;
  passed.set_pass(true);
  ExplainParity(BatchNormAudit(), &passed);
  EXPECT_EQ(passed.failures_size(), 0);
  EXPECT_FALSE(passed.audit().clean());

  ParityReport even;
  even.add_split(2);
  even.add_split(2);
  ExplainParity(BatchNormAudit(), &even);
  EXPECT_THAT(even.failures(0), Not(HasSubstr("uneven")));
}

}  // namespace
}  // namespace receipt_parity
