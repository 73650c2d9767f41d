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
