#include "model/layer_audit.h"

#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/instancenorm.h>
#include <torch/nn/modules/linear.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/buffer_comparison.h"
#include "model/classifier.h"
#include "model/keyed_dropout.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Names(const LayerAudit& audit) {
  std::vector<std::string> names;
  for (const LayerFinding& f : audit.findings()) {
    names.push_back(f.module() + ":" + f.module_type() + ":" + f.kind());
  }
  return names;
}

struct Block : torch::nn::Module {
  Block() {
    register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3)));
    register_module("bn", torch::nn::BatchNorm2d(4));
  }
};

struct Net : torch::nn::Module {
  Net() {
    register_module("block", std::make_shared<Block>());
    register_module("drop", torch::nn::Dropout(0.5));
    register_module("inorm", torch::nn::InstanceNorm2d(
                                 torch::nn::InstanceNorm2dOptions(4).track_running_stats(true)));
    register_module("plain_inorm", torch::nn::InstanceNorm2d(4));
    register_module("out", torch::nn::Linear(4, 2));
  }
};

TEST(LayerAuditTest, FindsBatchNormAndDropoutInTheModuleTreeByQualifiedName) {
  Net net;
  const LayerAudit audit = AuditModuleTree(net);
  EXPECT_FALSE(audit.clean());
  EXPECT_EQ(audit.method(), "torch::nn module tree");
  EXPECT_THAT(Names(audit),
              ElementsAre("block.bn:BatchNorm2d:batch_norm_training",
                          "drop:Dropout:dropout",
                          "inorm:InstanceNorm2d:instance_norm_running_stats"));
  EXPECT_THAT(audit.findings(0).effect(),
              HasSubstr("normalizes by each rank's local batch statistics"));
  EXPECT_THAT(audit.summary(), HasSubstr("block.bn (BatchNorm2d"));
  EXPECT_THAT(DescribeFinding(audit.findings(1)), HasSubstr("drop (Dropout): dropout"));
  EXPECT_TRUE(HasFinding(audit, kBatchNormTraining));
}

TEST(LayerAuditTest, EvalModeLayersAndDropoutOfZeroAreNotFindingsAndEachModuleCountsOnce) {
  torch::nn::Module root;
  torch::nn::BatchNorm2d frozen(4);
  frozen->eval();
  torch::nn::Dropout shared(0.5);
  root.register_module("frozen", frozen);
  root.register_module("no_drop", torch::nn::Dropout(0.0));
  root.register_module("drop", shared);
  root.register_module("same_drop", shared);
  const LayerAudit audit = AuditModuleTree(root);
  EXPECT_THAT(Names(audit), ElementsAre("drop:Dropout:dropout"));
  EXPECT_THAT(audit.summary(), HasSubstr("1 module(s)"));
}

TEST(LayerAuditTest, KeyedDropoutIsParitySafeAndAModelWithOnlyItAuditsClean) {
  for (const char* architecture : {"cnn", "mlp"}) {
    ModelConfig config;
    config.set_architecture(architecture);
    if (std::string(architecture) == "cnn") config.add_conv_channels(4);
    config.add_hidden_units(8);
    config.add_hidden_units(6);
    config.set_dropout(0.25);
    auto model = BuildClassifier(config, {1, 16, 16}, 4, 1);
    ASSERT_TRUE(model.ok()) << model.status();
    absl::StatusOr<LayerAudit> audit = AuditLayers(**model);
    ASSERT_TRUE(audit.ok()) << audit.status();
    EXPECT_TRUE(audit->clean()) << audit->summary();
    ASSERT_EQ(audit->parity_safe_size(), 2);
    EXPECT_EQ(audit->parity_safe(0).module(), "drop0");
    EXPECT_EQ(audit->parity_safe(1).kind(), kKeyedDropout);
    EXPECT_THAT(audit->parity_safe(0).effect(), HasSubstr("drawn from its key and the update"));
    EXPECT_THAT(audit->summary(), HasSubstr("2 parity-safe: drop0 (KeyedDropout"));
  }
  // A torch::nn::Dropout beside it is still a finding.
  torch::nn::Module root;
  root.register_module("keyed", KeyedDropout(0.5, 1, 0));
  root.register_module("plain", torch::nn::Dropout(0.5));
  const LayerAudit audit = AuditModuleTree(root);
  EXPECT_FALSE(audit.clean());
  EXPECT_THAT(Names(audit), ElementsAre("plain:Dropout:dropout"));
  EXPECT_EQ(audit.parity_safe_size(), 1);
}

struct WithOwnBuffer : torch::nn::Module {
  WithOwnBuffer() { register_buffer("count", at::zeros({1})); }
};

TEST(LayerAuditTest, AnUnknownModuleWithBuffersIsReported) {
  torch::nn::Module root;
  root.register_module("linear", torch::nn::Linear(2, 2));
  root.register_module("counter", std::make_shared<WithOwnBuffer>());
  const LayerAudit audit = AuditModuleTree(root);
  ASSERT_EQ(audit.findings_size(), 1);
  EXPECT_EQ(audit.findings(0).module(), "counter");
  EXPECT_EQ(audit.findings(0).kind(), kModuleWithBuffers);
}

TEST(LayerAuditTest, TheBuiltInModelsAuditClean) {
  for (const char* architecture : {"cnn", "mlp", "linear"}) {
    ModelConfig config;
    config.set_architecture(architecture);
    if (std::string(architecture) == "cnn") config.add_conv_channels(4);
    if (std::string(architecture) != "linear") config.add_hidden_units(8);
    auto model = BuildClassifier(config, {1, 16, 16}, 4, 1);
    ASSERT_TRUE(model.ok()) << model.status();
    absl::StatusOr<LayerAudit> audit = AuditLayers(**model);
    ASSERT_TRUE(audit.ok()) << audit.status();
    EXPECT_TRUE(audit->clean()) << architecture << ": " << audit->summary();
    EXPECT_THAT(audit->summary(), HasSubstr("no module"));
  }
}

// A scripted batch norm (with its counter) called from the parent's forward
// through a method call, then dropout in training mode.
torch::jit::Module ScriptedModelWithBatchNorm() {
  torch::jit::Module bn("BatchNormLike");
  bn.register_parameter("weight", at::ones({4}), false);
  bn.register_parameter("bias", at::zeros({4}), false);
  bn.register_buffer("running_mean", at::zeros({4}));
  bn.register_buffer("running_var", at::ones({4}));
  bn.register_buffer("num_batches_tracked", at::zeros({}, at::kLong));
  bn.register_attribute("training", c10::BoolType::get(), true);
  bn.define(R"(
def forward(self, x):
    self.num_batches_tracked.add_(1)
    return torch.batch_norm(x, self.weight, self.bias, self.running_mean,
                            self.running_var, self.training, 0.1, 1e-5, False)
)");
  torch::jit::Module block("Block");
  block.register_attribute("training", c10::BoolType::get(), true);
  block.register_module("bn", bn);
  block.define(R"(
def forward(self, x):
    return self.bn.forward(x)
)");
  torch::jit::Module m("M");
  m.register_attribute("training", c10::BoolType::get(), true);
  m.register_module("features", block);
  m.define(R"(
def forward(self, x):
    y = self.features.forward(x)
    return torch.dropout(y, 0.5, self.training)
)");
  return m;
}

TEST(LayerAuditTest, FindsScriptedBatchNormThroughMethodCallsAndDropout) {
  const torch::jit::Module m = ScriptedModelWithBatchNorm();
  absl::StatusOr<LayerAudit> audit = AuditScriptModule(m);
  ASSERT_TRUE(audit.ok()) << audit.status();
  EXPECT_THAT(audit->method(), HasSubstr("TorchScript"));
  // The batch norm once (its counter's add_ and its normalization are one
  // module), named by what it does to parity.
  EXPECT_THAT(Names(*audit),
              ElementsAre("features.bn:aten::batch_norm:batch_norm_training",
                          ":aten::dropout:dropout"));
  EXPECT_THAT(audit->findings(0).also(), ElementsAre("buffer_update"));
}

TEST(LayerAuditTest, ScriptedEvalOnlyDropoutAndPlainOpsAreClean) {
  torch::jit::Module m("Clean");
  m.register_parameter("w", at::ones({4, 4}), false);
  m.define(R"(
def forward(self, x):
    return torch.dropout(torch.relu(torch.matmul(x, self.w)), 0.5, False)
)");
  absl::StatusOr<LayerAudit> audit = AuditScriptModule(m);
  ASSERT_TRUE(audit.ok()) << audit.status();
  EXPECT_TRUE(audit->clean()) << audit->summary();
}

TEST(LayerAuditTest, ScriptedRandomOpsAndSetAttrAreFound) {
  torch::jit::Module m("Noisy");
  m.register_buffer("last", at::zeros({4}));
  m.define(R"(
def forward(self, x):
    self.last = x.mean(0)
    return x + torch.randn_like(x)
)");
  absl::StatusOr<LayerAudit> audit = AuditScriptModule(m);
  ASSERT_TRUE(audit.ok()) << audit.status();
  // One module: named by its random op, its state update also listed.
  EXPECT_THAT(Names(*audit), ElementsAre(":aten::randn_like:random"));
  EXPECT_THAT(audit->findings(0).also(), ElementsAre("state_update"));
}

// A Classifier backed by a TorchScript module, as a TorchScript model
// plugin would be: AuditLayers reads its graphs, not its (empty) C++ tree.
class ScriptBackedClassifier : public Classifier {
 public:
  explicit ScriptBackedClassifier(torch::jit::Module m) : module_(std::move(m)) {}
  at::Tensor forward(const at::Tensor& images) override {
    return module_.forward({images}).toTensor();
  }
  std::string Describe() const override { return "scripted"; }
  const torch::jit::Module* script_module() const override { return &module_; }

 private:
  torch::jit::Module module_;
};

TEST(LayerAuditTest, AClassifierWithAScriptModuleIsAuditedByItsGraphs) {
  ScriptBackedClassifier model(ScriptedModelWithBatchNorm());
  absl::StatusOr<LayerAudit> audit = AuditLayers(model);
  ASSERT_TRUE(audit.ok()) << audit.status();
  EXPECT_TRUE(HasFinding(*audit, kBatchNormTraining));
  EXPECT_TRUE(HasFinding(*audit, kDropout));
}

TEST(BufferComparisonTest, RunningStatisticsFromOtherBatchesDiffer) {
  torch::nn::BatchNorm1d a(3), b(3);
  a->forward(at::ones({4, 3}) * at::arange(3));
  b->forward(at::ones({4, 3}) * at::arange(3));
  auto same = CompareBuffers({*DigestBuffers(*a, 0), *DigestBuffers(*b, 1)});
  EXPECT_TRUE(same.equal());
  EXPECT_EQ(same.compared(), 3);  // running_mean, running_var, num_batches_tracked
  EXPECT_THAT(same.verdict(), HasSubstr("bitwise equal on all 2 ranks"));

  b->forward(at::rand({2, 3}));
  auto differ = CompareBuffers({*DigestBuffers(*a, 0), *DigestBuffers(*b, 1)});
  EXPECT_FALSE(differ.equal());
  EXPECT_THAT(differ.differing(),
              ElementsAre("num_batches_tracked", "running_mean", "running_var"));
  EXPECT_GT(differ.max_abs_diff(), 0);
  EXPECT_THAT(differ.verdict(), HasSubstr("nothing reduces buffers"));
}

TEST(BufferComparisonTest, AModelWithoutBuffersSaysSo) {
  torch::nn::Linear linear(2, 2);
  auto c = CompareBuffers({*DigestBuffers(*linear, 0), *DigestBuffers(*linear, 1)});
  EXPECT_TRUE(c.equal());
  EXPECT_EQ(c.compared(), 0);
  EXPECT_EQ(c.verdict(), "the model has no buffers: nothing to compare");
}

}  // namespace
}  // namespace receipt_parity
