#include "model/torchscript_classifier.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/jit/api/module.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/classifier_builder.h"
#include "model/layer_audit.h"
#include "model/torchscript_model.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The fixtures of make_test_modules.py, made once by the project's torch.
const std::string& FixtureDir() {
  static const std::string* dir = [] {
    auto* d = new std::string(::testing::TempDir() + "/torchscript_fixtures");
    const std::string command = std::string(std::getenv("RECEIPT_PARITY_PYTHON")) + " " +
                                std::getenv("RECEIPT_PARITY_MAKE_MODULES") + " " + *d;
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return d;
  }();
  return *dir;
}

std::string Fixture(const std::string& name) { return FixtureDir() + "/" + name; }

const std::vector<int64_t> kInput = {1, 8, 8};

std::shared_ptr<Classifier> LoadGood() {
  absl::StatusOr<std::shared_ptr<Classifier>> model =
      LoadTorchScriptClassifier(Fixture("good.pt"), kInput, 4);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *model : nullptr;
}

std::vector<std::string> Keys(const torch::OrderedDict<std::string, at::Tensor>& d) {
  return d.keys();
}

TEST(TorchScriptClassifierTest, MirrorsTheModulesParametersAndBuffersByName) {
  std::shared_ptr<Classifier> model = LoadGood();
  ASSERT_NE(model, nullptr);
  EXPECT_THAT(Keys(model->named_parameters()),
              ElementsAre("conv.weight", "conv.bias", "bn.weight", "bn.bias",
                          "head.weight", "head.bias"));
  EXPECT_THAT(Keys(model->named_buffers()),
              ElementsAre("bn.running_mean", "bn.running_var", "bn.num_batches_tracked"));
  EXPECT_THAT(model->Describe(), HasSubstr("torchscript(module=__torch__."));
  EXPECT_THAT(model->Describe(), HasSubstr(";in=1x8x8;classes=4)"));
  ASSERT_NE(model->script_module(), nullptr);
  EXPECT_EQ(model->forward(at::rand({5, 1, 8, 8})).sizes(), (std::vector<int64_t>{5, 4}));
}

TEST(TorchScriptClassifierTest, SharesStorageWithTheScriptModule) {
  std::shared_ptr<Classifier> model = LoadGood();
  ASSERT_NE(model, nullptr);
  const torch::jit::Module& script = *model->script_module();
  {
    torch::NoGradGuard no_grad;
    model->named_parameters()["head.bias"].fill_(0.5);
  }
  const at::Tensor bias = script.attr("head").toModule().attr("bias").toTensor();
  EXPECT_TRUE(at::equal(bias, at::full({4}, 0.5)));
  // Gradients of forward land on the classifier's parameters.
  model->forward(at::rand({3, 1, 8, 8})).sum().backward();
  for (const auto& p : model->named_parameters()) {
    EXPECT_TRUE(p.value().grad().defined()) << p.key();
  }
}

TEST(TorchScriptClassifierTest, RunningStatisticsUpdatedInForwardAreSeenAsBuffers) {
  std::shared_ptr<Classifier> model = LoadGood();
  ASSERT_NE(model, nullptr);
  const at::Tensor before = model->named_buffers()["bn.running_mean"].clone();
  model->forward(at::rand({4, 1, 8, 8}) + 1);
  EXPECT_FALSE(at::equal(model->named_buffers()["bn.running_mean"], before));
  EXPECT_EQ(model->named_buffers()["bn.num_batches_tracked"].item<int64_t>(), 1);
  // In eval mode batch norm uses and keeps its running statistics.
  model->eval();
  EXPECT_FALSE(model->script_module()->is_training());
  EXPECT_FALSE(model->script_module()->attr("bn").toModule().is_training());
  const at::Tensor kept = model->named_buffers()["bn.running_mean"].clone();
  model->forward(at::rand({4, 1, 8, 8}));
  EXPECT_TRUE(at::equal(model->named_buffers()["bn.running_mean"], kept));
  model->train();
  EXPECT_TRUE(model->script_module()->attr("bn").toModule().is_training());
}

TEST(TorchScriptClassifierTest, ABufferReassignedInForwardIsRebound) {
  absl::StatusOr<std::shared_ptr<Classifier>> model =
      LoadTorchScriptClassifier(Fixture("reassigns.pt"), kInput, 4);
  ASSERT_TRUE(model.ok()) << model.status();
  (*model)->forward(at::rand({2, 1, 8, 8}));
  (*model)->forward(at::rand({2, 1, 8, 8}));
  // The load's check ran one forward too.
  EXPECT_EQ((*model)->named_buffers()["calls"].item<float>(), 3);
  EXPECT_EQ((*model)->script_module()->attr("calls").toTensor().item<float>(), 3);
}

TEST(TorchScriptClassifierTest, BadFilesAreRefusedNamingTheFile) {
  const std::string missing = Fixture("missing.pt");
  absl::StatusOr<std::shared_ptr<Classifier>> m =
      LoadTorchScriptClassifier(missing, kInput, 4);
  EXPECT_TRUE(absl::IsNotFound(m.status())) << m.status();
  EXPECT_THAT(m.status().message(), HasSubstr("path: " + missing + ": no such file"));

  m = LoadTorchScriptClassifier(Fixture("corrupt.pt"), kInput, 4);
  EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
  EXPECT_THAT(m.status().message(),
              HasSubstr(Fixture("corrupt.pt") + ": not a TorchScript module"));

  m = LoadTorchScriptClassifier(Fixture("wrong_classes.pt"), kInput, 4);
  EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
  EXPECT_THAT(m.status().message(),
              HasSubstr(Fixture("wrong_classes.pt") +
                        ": maps a [2, 1, 8, 8] batch to Float [2, 3]; a receipt "
                        "model must map [N, 1, 8, 8] to float [N, 4]"));

  m = LoadTorchScriptClassifier(Fixture("good.pt"), {1, 16, 16}, 4);
  EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
  EXPECT_THAT(m.status().message(), HasSubstr("forward of a [2, 1, 16, 16] batch failed"));
}

// Issue 25's audit on a module torch.jit.script made from nn.Modules: each
// module once (nn.Dropout's function holds dropout and dropout_; the batch
// norm is reached as features.1 and norm_again, two objects after loading
// that share its tensors), nn.Dropout(p=0.0) and a batch norm frozen in eval
// mode are no findings; the frozen one stays in eval mode
// while the classifier trains, and after a validation-style eval/train.
TEST(TorchScriptClassifierTest, TheAuditCountsEachModuleOnceAndSkipsWhatDoesNothing) {
  absl::StatusOr<std::shared_ptr<Classifier>> model =
      LoadTorchScriptClassifier(Fixture("layers.pt"), kInput, 4);
  ASSERT_TRUE(model.ok()) << model.status();
  for (int pass = 0; pass < 2; ++pass) {
    absl::StatusOr<LayerAudit> audit = AuditLayers(**model);
    ASSERT_TRUE(audit.ok()) << audit.status();
    std::vector<std::string> found;
    for (const LayerFinding& f : audit->findings()) found.push_back(f.module() + ":" + f.kind());
    EXPECT_THAT(found, ElementsAre("features.1:batch_norm_training", "drop:dropout"));
    EXPECT_THAT(audit->summary(), HasSubstr("2 module(s)"));
    (*model)->eval();
    (*model)->train();
  }
  EXPECT_FALSE((*model)->script_module()->attr("features").toModule()
                   .attr("2").toModule().is_training());
}

TEST(TorchScriptClassifierTest, AForwardThatTakesKeysGetsEachExamplesKeyInAnUpdate) {
  absl::StatusOr<std::shared_ptr<Classifier>> model =
      LoadTorchScriptClassifier(Fixture("takes_keys.pt"), kInput, 4);
  ASSERT_TRUE(model.ok()) << model.status();
  const at::Tensor images = at::rand({3, 1, 8, 8});
  const at::Tensor keys = at::tensor(std::vector<int64_t>{4, 7, -3}, at::kLong);
  // The fixture adds keys % 2 to every logit; outside an update, zeros.
  const at::Tensor plain = (*model)->forward(images);
  const at::Tensor keyed = (*model)->ForwardForUpdate(images, keys);
  EXPECT_TRUE(at::allclose(keyed - plain,
                           (keys % 2).to(at::kFloat).unsqueeze(1).expand({3, 4})));
}

TEST(TorchScriptClassifierTest, AForwardWhoseSecondArgumentIsNotATensorIsRefused) {
  absl::StatusOr<std::shared_ptr<Classifier>> m =
      LoadTorchScriptClassifier(Fixture("wrong_keys.pt"), kInput, 4);
  EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
  EXPECT_THAT(m.status().message(),
              HasSubstr(Fixture("wrong_keys.pt") +
                        ": forward's second argument 'scale' is float; the harness "
                        "passes forward(images) or forward(images, keys)"));
}

TEST(TorchScriptModelTest, ThePluginResolvesItsPathAndChecksWhenTheConfigLoads) {
  TorchScriptModelFactory factory;
  TorchScriptModelOptions options;
  EXPECT_THAT(factory.Create(options).status().message(), HasSubstr("path: missing"));
  options.set_path("good.pt");
  absl::StatusOr<std::unique_ptr<ClassifierBuilder>> builder = factory.Create(options);
  ASSERT_TRUE(builder.ok()) << builder.status();
  ClassifierSpec spec{kInput, 4, 0, nullptr};
  EXPECT_TRUE(absl::IsNotFound((*builder)->Check(spec)));  // relative to the cwd
  spec.resolve_path = [](const std::string& written) { return Fixture(written); };
  EXPECT_TRUE((*builder)->Check(spec).ok());
  absl::StatusOr<std::shared_ptr<Classifier>> a = (*builder)->Build(spec);
  absl::StatusOr<std::shared_ptr<Classifier>> b = (*builder)->Build(spec);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(ModelRevision(**a), ModelRevision(**b));
}

}  // namespace
}  // namespace receipt_parity
