#include "config/config_loader.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/atomic_file.h"
#include "optimizers/builtin_optimizers.h"
#include "plugins/plugin_registry.h"
#include "samplers/sampler_options.pb.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kValid[] = R"pb(
world_size: 2
global_batch: 4
data { synthetic { num_identities: 20 } validation_fraction: 0.25 }
model { architecture: "linear" }
optimizer { sgd { learning_rate: 0.1 } }
)pb";

std::string WriteConfig(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  EXPECT_TRUE(WriteFileAtomically(path, text).ok());
  return path;
}

// Writes `text` as `name` in the test's folder and loads it.
absl::StatusOr<LoadedConfig> Load(const std::string& text, const std::string& name) {
  return LoadTrainingConfig(WriteConfig(name, text));
}

std::string Message(const absl::StatusOr<LoadedConfig>& loaded) {
  return std::string(loaded.status().message());
}

TEST(ConfigLoaderTest, ValidConfigGetsDefaults) {
  auto loaded = Load(kValid, "valid.pbtxt");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const TrainingConfig& c = loaded->config;
  EXPECT_EQ(c.precision(), "fp32");
  EXPECT_EQ(c.backend(), "gloo");
  EXPECT_EQ(c.sampler().name(), "masked_tail");
  EXPECT_EQ(c.reducer().name(), "allreduce_sum");
  EXPECT_EQ(LocalBatchSizes(c), (std::vector<int>{2, 2}));
}

TEST(ConfigLoaderTest, UnsetFieldsKeepTodaysDefaults) {
  auto loaded = Load(kValid, "defaults.pbtxt");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const TrainingConfig& c = loaded->config;
  EXPECT_EQ(c.epochs(), 1);
  EXPECT_EQ(c.data().image_size(), 32);
  EXPECT_EQ(c.data().views_per_identity(), 1);
  EXPECT_EQ(c.loss_weighting().name(), "global_count");
  EXPECT_EQ(c.metric_dedup().name(), "by_receipt_id");
  EXPECT_EQ(c.parity().rtol(), 1e-6);
  EXPECT_EQ(c.parity().atol(), 1e-7);
  EXPECT_EQ(c.checkpoint().keep_last(), 2);
  EXPECT_EQ(c.run().log_every_updates(), 10);
  EXPECT_EQ(c.run().collective_timeout_seconds(), 60);
  EXPECT_EQ(c.run().heartbeat_timeout_seconds(), 5);
  EXPECT_TRUE(c.run().survivors_go_on());
  EXPECT_TRUE(c.run().replace_lost_ranks());
  EXPECT_EQ(c.run().max_replacements(), 4);
  EXPECT_EQ(c.run().intra_op_threads(), 1);
  EXPECT_EQ(c.run().master_addr(), "127.0.0.1");
  EXPECT_EQ(c.run().launcher(), "local");
  EXPECT_EQ(c.run().fault().kill_generation(), 1);
}

TEST(ConfigLoaderTest, SyntaxErrorsCarryFileLineAndColumn) {
  const std::string path = WriteConfig(
      "syntax.pbtxt", "world_size: 2\nglobal_batch: four\n");
  auto loaded = LoadTrainingConfig(path);
  ASSERT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(loaded.status().message()),
              StartsWith(path + ":2:15: "));
}

TEST(ConfigLoaderTest, UnknownFieldsAreErrorsWithTheirLocation) {
  auto loaded = Load(std::string(kValid) + "\nworld_sise: 3\n", "typo.pbtxt");
  EXPECT_THAT(loaded.status().message(), HasSubstr("typo.pbtxt:8:"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("world_sise"));
}

TEST(ConfigLoaderTest, ValidationErrorsNameTheFieldAndWhereItIsWritten) {
  auto fp16 = Load(std::string(kValid) + "precision: \"fp16\"\n", "p.pbtxt");
  EXPECT_THAT(fp16.status().message(),
              HasSubstr("p.pbtxt:7:1: precision: unknown 'fp16'; known: fp32, bf16"));
  auto bf16 = Load(std::string(kValid) + "precision: \"bf16\"\n", "bf16.pbtxt");
  EXPECT_TRUE(bf16.ok()) << bf16.status();

  auto nccl = Load(std::string(kValid) + "backend: \"nccl\"\n", "b.pbtxt");
  EXPECT_THAT(nccl.status().message(),
              HasSubstr("b.pbtxt:7:1: backend: nccl reduces CUDA tensors only"));

  auto tpu = Load(std::string(kValid) + "device: \"tpu\"\n", "d.pbtxt");
  EXPECT_THAT(tpu.status().message(),
              HasSubstr("d.pbtxt:7:1: device: unknown 'tpu'; known: cpu, cuda"));

  auto uneven = Load(std::string(kValid) + "local_batch_sizes: [3, 2]\n", "u.pbtxt");
  EXPECT_THAT(uneven.status().message(),
              HasSubstr("u.pbtxt:7:1: local_batch_sizes: add up to 5"));

  auto lr = Load(
      "world_size: 1 global_batch: 2 model { architecture: \"cnn\" }\n"
      "data { synthetic { num_identities: 3 } }\n"
      "optimizer {\n  sgd { learning_rate: -1 }\n}\n",
      "lr.pbtxt");
  EXPECT_THAT(lr.status().message(),
              HasSubstr("lr.pbtxt:4:9: optimizer.sgd.learning_rate: must be > 0"));

  auto odd = Load(std::string(kValid) + "global_batch: 5\n", "odd.pbtxt");
  EXPECT_FALSE(odd.ok());  // global_batch written twice is a syntax error
  auto indivisible = Load(
      "world_size: 2 global_batch: 3 model { architecture: \"linear\" }\n"
      "data { synthetic { num_identities: 3 } }\n"
      "optimizer { sgd { learning_rate: 1 } }\n",
      "i.pbtxt");
  EXPECT_THAT(indivisible.status().message(),
              HasSubstr("i.pbtxt:1:15: global_batch: 3 slots do not split"));
}

TEST(ConfigLoaderTest, NonFiniteOrOutOfRangeHyperparametersAreRefusedWithTheirLocation) {
  const std::string head =
      "world_size: 1 global_batch: 2 model { architecture: \"linear\" }\n"
      "data { synthetic { num_identities: 3 } }\n";
  const std::pair<std::string, std::string> cases[] = {
      {"optimizer { sgd { learning_rate: nan } }",
       "h.pbtxt:3:19: optimizer.sgd.learning_rate: must be > 0 and finite, got nan"},
      {"optimizer { sgd { learning_rate: inf } }",
       "h.pbtxt:3:19: optimizer.sgd.learning_rate: must be > 0 and finite, got inf"},
      {"optimizer { sgd { learning_rate: 0.1 momentum: nan } }",
       "h.pbtxt:3:38: optimizer.sgd.momentum: must be in [0, 1), got nan"},
      {"optimizer { sgd { learning_rate: 0.1 weight_decay: -inf } }",
       "h.pbtxt:3:38: optimizer.sgd.weight_decay: must be finite and >= 0, got -inf"},
      {"optimizer { adamw { learning_rate: inf } }",
       "h.pbtxt:3:21: optimizer.adamw.learning_rate: must be > 0 and finite, got inf"},
      {"optimizer { adamw { learning_rate: 0.1 beta1: 1 } }",
       "h.pbtxt:3:40: optimizer.adamw.beta1: must be in [0, 1) (0 means 0.9), got 1"},
      {"optimizer { adamw { learning_rate: 0.1 beta2: nan } }",
       "h.pbtxt:3:40: optimizer.adamw.beta2: must be in [0, 1) (0 means 0.999), got nan"},
      {"optimizer { adamw { learning_rate: 0.1 eps: inf } }",
       "h.pbtxt:3:40: optimizer.adamw.eps: must be finite and >= 0 (0 means 1e-8), got inf"},
      {"optimizer { adamw { learning_rate: 0.1 weight_decay: nan } }",
       "h.pbtxt:3:40: optimizer.adamw.weight_decay: must be finite and >= 0, got nan"},
      {"optimizer { sgd { learning_rate: 0.1 } } parity { rtol: nan }",
       "h.pbtxt:3:51: parity.rtol: must be finite and >= 0"},
      {"optimizer { sgd { learning_rate: 0.1 } } parity { atol: inf }",
       "h.pbtxt:3:51: parity.atol: must be finite and >= 0"},
  };
  for (const auto& [optimizer, expected] : cases) {
    auto loaded = Load(head + optimizer + "\n", "h.pbtxt");
    EXPECT_THAT(Message(loaded), HasSubstr(expected)) << optimizer;
  }
  auto adamw_defaults = Load(head + "optimizer { adamw { learning_rate: 0.1 } }\n", "a.pbtxt");
  EXPECT_TRUE(adamw_defaults.ok()) << adamw_defaults.status();
}

TEST(ConfigLoaderTest, LocalBatchSizesThatOverflowAnIntAreRefused) {
  auto wrapped = Load(
      "world_size: 3 global_batch: 1 model { architecture: \"linear\" }\n"
      "data { synthetic { num_identities: 20 } }\n"
      "optimizer { sgd { learning_rate: 0.1 } }\n"
      "local_batch_sizes: [2147483647, 2147483647, 3]\n",
      "wrap.pbtxt");
  EXPECT_THAT(Message(wrapped),
              HasSubstr("wrap.pbtxt:4:1: local_batch_sizes: add up to 4294967297, "
                        "not global_batch 1"));
}

TEST(ConfigLoaderTest, MoreRanksThanTheHardMaximumAreRefusedWithTheFigures) {
  auto many = Load(
      "world_size: 100000 global_batch: 100000 model { architecture: \"linear\" }\n"
      "data { synthetic { num_identities: 20 } }\n"
      "optimizer { sgd { learning_rate: 0.1 } }\n",
      "many.pbtxt");
  EXPECT_THAT(Message(many), HasSubstr(absl::StrCat("many.pbtxt:1:1: world_size: must be <= ",
                                                    kMaxWorldSize, " (the most ranks a run "
                                                    "may start), got 100000")));
  auto three = Load(
      "world_size: 3 global_batch: 3 model { architecture: \"linear\" }\n"
      "data { synthetic { num_identities: 20 } }\n"
      "optimizer { sgd { learning_rate: 0.1 } }\n",
      "three.pbtxt");
  EXPECT_TRUE(three.ok()) << three.status();
}

TEST(ConfigLoaderTest, ADatasetThatCannotFitInMemoryIsRefusedAtLoadWithTheFigures) {
  auto huge = Load(
      "world_size: 1 global_batch: 2 model { architecture: \"linear\" }\n"
      "data {\n  synthetic { num_identities: 1000000 }\n  views_per_identity: 1000\n}\n"
      "optimizer { sgd { learning_rate: 0.1 } }\n",
      "huge.pbtxt");
  EXPECT_THAT(Message(huge),
              HasSubstr("huge.pbtxt:3:15: data.synthetic.num_identities: 1000000 identities x "
                        "1000 views of 32x32 float pixels (plus an int64 label each) need "
                        "4104000000000 bytes"));
}

// The optimizer in its plugin form: PyTorch's defaults; the forms are
// exclusive; a plugin's own errors name the field.
TEST(ConfigLoaderTest, TheOptimizerIsAPluginInEitherForm) {
  const std::string without_optimizer =
      absl::StrReplaceAll(kValid, {{"optimizer { sgd { learning_rate: 0.1 } }\n", ""}});
  auto adam = Load(without_optimizer + "optimizer { name: \"adam\" options { "
                   "[type.googleapis.com/receipt_parity.AdamOptions] { lr: 0.01 amsgrad: true } } }\n",
                   "adam.pbtxt");
  ASSERT_TRUE(adam.ok()) << adam.status();
  EXPECT_EQ(adam->optimizer.name, "adam");
  auto* built = dynamic_cast<const AdamOptimizer*>(adam->optimizer.plugin.get());
  ASSERT_NE(built, nullptr);
  EXPECT_FALSE(built->decoupled());
  EXPECT_EQ(built->options().lr(), 0.01);
  EXPECT_TRUE(built->options().amsgrad());
  EXPECT_EQ(built->options().beta2(), 0.999);

  // The config form keeps its meaning: an AdamW without weight decay has none.
  auto config_form = Load(without_optimizer + "optimizer { adamw { learning_rate: 0.01 } }\n",
                          "adamw_config.pbtxt");
  ASSERT_TRUE(config_form.ok()) << config_form.status();
  EXPECT_EQ(config_form->optimizer.name, "adamw");
  EXPECT_EQ(dynamic_cast<const AdamOptimizer&>(*config_form->optimizer.plugin)
                .options()
                .weight_decay(),
            0);
  auto plugin_form = Load(without_optimizer + "optimizer { name: \"adamw\" }\n",
                          "adamw_plugin.pbtxt");
  ASSERT_TRUE(plugin_form.ok()) << plugin_form.status();
  EXPECT_EQ(dynamic_cast<const AdamOptimizer&>(*plugin_form->optimizer.plugin)
                .options()
                .weight_decay(),
            0.01);

  auto both = Load(without_optimizer +
                       "optimizer { sgd { learning_rate: 0.1 } name: \"adam\" }\n",
                   "both.pbtxt");
  EXPECT_THAT(Message(both), HasSubstr("optimizer: write sgd { ... }, adamw { ... } or a "
                                       "plugin's name and options, not both"));
  auto unknown = Load(without_optimizer + "optimizer { name: \"lion\" }\n", "lion.pbtxt");
  EXPECT_THAT(Message(unknown), HasSubstr("optimizer.name: no optimizer plugin named 'lion'"));
  auto bad = Load(without_optimizer + "optimizer { name: \"sgd\" options { "
                  "[type.googleapis.com/receipt_parity.SgdOptions] { lr: -1 } } }\n",
                  "bad_lr.pbtxt");
  EXPECT_THAT(Message(bad), HasSubstr("optimizer.options: lr: must be finite and > 0"));
  auto nesterov = Load(without_optimizer +
                           "optimizer { sgd { learning_rate: 0.1 nesterov: true } }\n",
                       "nesterov.pbtxt");
  EXPECT_THAT(Message(nesterov), HasSubstr("optimizer.sgd.nesterov: needs momentum > 0"));
}

// MPI is a transport, chosen like Gloo and NCCL; mpi_allreduce, the old
// reducer name, brings it.
TEST(ConfigLoaderTest, BackendMpiIsATransportAndMpiAllreduceBringsIt) {
  auto mpi = Load(std::string(kValid) + "backend: \"mpi\"\n", "mpi.pbtxt");
  ASSERT_TRUE(mpi.ok()) << mpi.status();
  EXPECT_EQ(mpi->config.backend(), "mpi");
  EXPECT_EQ(mpi->config.reducer().name(), "allreduce_sum");

  auto alias = Load(std::string(kValid) + "reducer { name: \"mpi_allreduce\" }\n",
                    "alias.pbtxt");
  ASSERT_TRUE(alias.ok()) << alias.status();
  EXPECT_EQ(alias->config.backend(), "mpi");
  EXPECT_EQ(alias->config.reducer().name(), "mpi_allreduce");

  // Written before backend "mpi" existed: "gloo" beside mpi_allreduce meant
  // Gloo for all but the gradients, which is what "mpi" means now.
  auto old_form =
      Load(std::string(kValid) + "reducer { name: \"mpi_allreduce\" }\nbackend: \"gloo\"\n",
           "old_form.pbtxt");
  ASSERT_TRUE(old_form.ok()) << old_form.status();
  EXPECT_EQ(old_form->config.backend(), "mpi");
  EXPECT_EQ(old_form->fingerprint, alias->fingerprint);

  auto alias_over_nccl =
      Load(std::string(kValid) +
               "reducer { name: \"mpi_allreduce\" }\nbackend: \"nccl\"\ndevice: \"cuda\"\n",
           "alias_nccl.pbtxt");
  ASSERT_FALSE(alias_over_nccl.ok());
  EXPECT_THAT(Message(alias_over_nccl),
              HasSubstr("alias_nccl.pbtxt:8:1: backend: reducer mpi_allreduce is "
                        "allreduce_sum over backend \"mpi\", but backend is 'nccl'"));

  auto on_gpu = Load(std::string(kValid) + "backend: \"mpi\"\ndevice: \"cuda\"\n",
                     "mpi_cuda.pbtxt");
  ASSERT_FALSE(on_gpu.ok());
  EXPECT_THAT(Message(on_gpu), HasSubstr("backend: mpi reduces CPU tensors only"));

  auto unknown = Load(std::string(kValid) + "backend: \"ucc\"\n", "ucc.pbtxt");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(Message(unknown), HasSubstr("unknown 'ucc'; known: gloo, nccl, mpi"));
}

TEST(ConfigLoaderTest, AFieldLeftAtItsDefaultIsNamedWithTheFileOnly) {
  auto missing = Load("world_size: 1 global_batch: 1\n", "m.pbtxt");
  EXPECT_THAT(missing.status().message(),
              HasSubstr("m.pbtxt: model.architecture: missing"));
}

TEST(ConfigLoaderTest, MissingFileIsNotFound) {
  EXPECT_EQ(LoadTrainingConfig("/nonexistent/x.pbtxt").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ConfigLoaderTest, UnknownPluginOptionTypeIsASyntaxError) {
  auto loaded = Load(std::string(kValid) +
                         "reducer { name: \"allreduce_sum\" options { "
                         "[type.googleapis.com/receipt_parity.NoSuchOptions] { } } }\n",
                     "any.pbtxt");
  EXPECT_THAT(loaded.status().message(), HasSubstr("any.pbtxt:7:"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("NoSuchOptions"));
}

// The data's own checks run at load, located.
TEST(ConfigLoaderTest, DataSettingsAreCheckedAtLoad) {
  auto size = Load(
      "global_batch: 2 model { architecture: \"linear\" }\n"
      "optimizer { sgd { learning_rate: 1 } }\n"
      "data {\n  synthetic { num_identities: 3 }\n  image_size: 4\n}\n",
      "size.pbtxt");
  EXPECT_THAT(Message(size), HasSubstr("size.pbtxt:5:3: data.image_size: must be in [8, 512]"));

  auto rare = Load(
      "global_batch: 2 model { architecture: \"linear\" }\n"
      "optimizer { sgd { learning_rate: 1 } }\n"
      "data { synthetic { num_identities: 3 rare_class_fraction: 0.7 } }\n",
      "rare.pbtxt");
  EXPECT_THAT(Message(rare),
              HasSubstr("rare.pbtxt:3:38: data.synthetic.rare_class_fraction: must be in (0, 0.5)"));

  auto none = Load(
      "global_batch: 2 model { architecture: \"linear\" }\n"
      "optimizer { sgd { learning_rate: 1 } }\n",
      "none.pbtxt");
  EXPECT_THAT(Message(none), HasSubstr("none.pbtxt: data.source: set data.synthetic"));
}

TEST(ConfigLoaderTest, ModelSettingsAreCheckedAtLoad) {
  const std::string head =
      "global_batch: 2 optimizer { sgd { learning_rate: 1 } }\n"
      "data { synthetic { num_identities: 3 } image_size: 16 }\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"model { architecture: \"rnn\" }",
       "model.pbtxt:3:9: model.architecture: unknown 'rnn'; known: cnn, mlp, linear"},
      {"model { architecture: \"cnn\" conv_channels: [8, 0] }",
       "model.pbtxt:3:29: model.conv_channels: must be positive, got 0"},
      {"model { architecture: \"mlp\" hidden_units: -4 }",
       "model.pbtxt:3:29: model.hidden_units: must be positive, got -4"},
      {"model { architecture: \"cnn\" hidden_units: 8 }",
       // Unset in a written model: named where the model is.
       "model.pbtxt:3:1: model.conv_channels: a cnn needs at least one conv layer"},
      // 16 pixels halved five times is not a whole number.
      {"model { architecture: \"cnn\" conv_channels: [4, 4, 4, 4, 4] }",
       "model.conv_channels: a cnn with 5 conv layers needs [C, S, S] inputs with S "
       "divisible by 32, got 1x16x16"},
      {"model { architecture: \"linear\" hidden_units: 8 }",
       "model.pbtxt:3:32: model.hidden_units: a linear model has no hidden layers"},
  };
  for (const auto& [model, expected] : cases) {
    auto loaded = Load(head + model + "\n", "model.pbtxt");
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument) << model;
    EXPECT_THAT(Message(loaded), HasSubstr(expected)) << model;
  }
  auto good = Load(head + "model { architecture: \"cnn\" conv_channels: [4, 8] }\n",
                   "good.pbtxt");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->model.spec.input_shape, (std::vector<int64_t>{1, 16, 16}));
  EXPECT_EQ(good->model.spec.num_classes, 4);
}

TEST(ConfigLoaderTest, EveryPluginSelectionIsCheckedAtLoad) {
  auto name = Load(std::string(kValid) + "sampler { name: \"round_robin\" }\n", "n.pbtxt");
  EXPECT_EQ(name.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(name),
              HasSubstr("n.pbtxt:7:11: sampler.name: no sampler_policy plugin named "
                        "'round_robin'; registered: drop_tail, duplicate_pad, global_batches, masked_tail"));

  auto type = Load(std::string(kValid) +
                       "reducer { name: \"allreduce_sum\" options { "
                       "[type.googleapis.com/receipt_parity.MaskedTailOptions] { } } }\n",
                   "t.pbtxt");
  EXPECT_THAT(Message(type),
              HasSubstr("t.pbtxt:7:33: reducer.options: plugin 'allreduce_sum' takes options "
                        "of type receipt_parity.AllreduceSumOptions"));

  // A value the factory refuses, found by creating the plugin at load.
  auto value = Load(std::string(kValid) +
                        "loss_weighting { name: \"class_balanced\"\n"
                        "  options { [type.googleapis.com/receipt_parity.ClassBalancedOptions] "
                        "{ power: -1 } } }\n",
                    "v.pbtxt");
  EXPECT_THAT(Message(value),
              HasSubstr("v.pbtxt:8:3: loss_weighting.options: class_balanced.power: must be "
                        "finite and >= 0"));

  auto empty = Load(std::string(kValid) + "metric_dedup { name: \"\" }\n", "e.pbtxt");
  EXPECT_THAT(Message(empty), HasSubstr("e.pbtxt:7:16: metric_dedup.name: no metric_dedup "
                                        "plugin named ''"));
}

TEST(ConfigLoaderTest, LoadedPluginsCarryTheirTypedOptions) {
  auto loaded = Load(std::string(kValid) +
                         "sampler { name: \"duplicate_pad\" options { "
                         "[type.googleapis.com/receipt_parity.DuplicatePadOptions] "
                         "{ disable_shuffle: true } } }\n",
                     "o.pbtxt");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->plugins.sampler.name(), "duplicate_pad");
  absl::StatusOr<RunPlugins> plugins = loaded->plugins.Create();
  ASSERT_TRUE(plugins.ok()) << plugins.status();
  absl::StatusOr<GlobalOrder> order = plugins->sampler->Order({5, 1, 0, 3});
  ASSERT_TRUE(order.ok()) << order.status();
  std::vector<int64_t> indices;
  for (const Slot& slot : order->slots) indices.push_back(slot.dataset_index);
  EXPECT_EQ(indices, (std::vector<int64_t>{0, 1, 2, 3, 4}));  // not shuffled
}

TEST(ConfigLoaderTest, TheLoadSaysWhetherTheRunsUpdatesDependOnTheWorldSize) {
  auto dependent = Load(kValid, "dependent.pbtxt");
  ASSERT_TRUE(dependent.ok()) << dependent.status();
  EXPECT_EQ(dependent->plugins.world_size_dependence,
            "sampler.name \"masked_tail\" deals its order by the world size");
  const std::string free_order = std::string(kValid) + "sampler { name: \"global_batches\" }\n";
  auto independent = Load(free_order, "independent.pbtxt");
  ASSERT_TRUE(independent.ok()) << independent.status();
  EXPECT_EQ(independent->plugins.world_size_dependence, "");
  for (const auto& [extra, field] : std::vector<std::pair<std::string, std::string>>{
           {"loss_weighting { name: \"rank_mean\" }\n", "loss_weighting.name \"rank_mean\""},
           {"loss_weighting { name: \"micro_batch_mean\" }\n",
            "loss_weighting.name \"micro_batch_mean\""},
           {"reducer { name: \"rank_average\" }\n", "reducer.name \"rank_average\""}}) {
    auto mixed = Load(free_order + extra, "mixed.pbtxt");
    ASSERT_TRUE(mixed.ok()) << mixed.status();
    EXPECT_THAT(mixed->plugins.world_size_dependence, StartsWith(field));
  }
  auto balanced = Load(free_order + "loss_weighting { name: \"class_balanced\" }\n", "b.pbtxt");
  ASSERT_TRUE(balanced.ok()) << balanced.status();
  EXPECT_EQ(balanced->plugins.world_size_dependence, "");
}

TEST(ConfigLoaderTest, WithWorldSizeSplitsTheGlobalBatchOrNamesTheField) {
  auto loaded = Load(std::string(kValid) + "local_batch_sizes: [3, 1]\n", "w.pbtxt");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  absl::StatusOr<LoadedConfig> four = WithWorldSize(*loaded, 4);
  ASSERT_TRUE(four.ok()) << four.status();
  EXPECT_EQ(four->config.world_size(), 4);
  EXPECT_EQ(LocalBatchSizes(four->config), (std::vector<int>{1, 1, 1, 1}));
  EXPECT_NE(four->fingerprint, loaded->fingerprint);
  absl::StatusOr<LoadedConfig> three = WithWorldSize(*loaded, 3);
  ASSERT_FALSE(three.ok());
  EXPECT_EQ(three.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(three.status().message(), HasSubstr("w.pbtxt:3:"));
  EXPECT_THAT(three.status().message(), HasSubstr("global_batch: 4 slots do not split evenly"));
  EXPECT_THAT(three.status().message(), HasSubstr("on the launcher's 3 workers"));
}

TEST(ConfigLoaderTest, ZeroParityTolerancesMeanExactEquality) {
  auto exact = Load(std::string(kValid) + "parity { rtol: 0 atol: 0 }\n", "exact.pbtxt");
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_TRUE(exact->config.parity().has_rtol());
  EXPECT_EQ(exact->config.parity().rtol(), 0);
  EXPECT_EQ(exact->config.parity().atol(), 0);

  auto one = Load(std::string(kValid) + "parity { atol: 0 }\n", "one.pbtxt");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->config.parity().rtol(), 1e-6);  // unset: the default
  EXPECT_EQ(one->config.parity().atol(), 0);

  auto negative = Load(std::string(kValid) + "parity { rtol: -1 }\n", "neg.pbtxt");
  EXPECT_THAT(Message(negative), HasSubstr("neg.pbtxt:7:10: parity.rtol: must be finite and >= 0"));
  auto nan = Load(std::string(kValid) + "parity { atol: nan }\n", "nan.pbtxt");
  EXPECT_THAT(Message(nan), HasSubstr("nan.pbtxt:7:10: parity.atol: must be finite"));
}

TEST(ConfigLoaderTest, KeepLastZeroIsRefusedWhileSaving) {
  auto saving = Load(std::string(kValid) + "checkpoint { every_updates: 5 keep_last: 0 }\n",
                     "k.pbtxt");
  EXPECT_EQ(saving.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(saving),
              HasSubstr("k.pbtxt:7:31: checkpoint.keep_last: 0 keeps no generation, but "
                        "every_updates 5 saves them"));

  auto not_saving = Load(std::string(kValid) + "checkpoint { keep_last: 0 }\n", "k0.pbtxt");
  ASSERT_TRUE(not_saving.ok()) << not_saving.status();
  EXPECT_EQ(not_saving->config.checkpoint().keep_last(), 0);

  auto unset = Load(std::string(kValid) + "checkpoint { every_updates: 5 }\n", "k2.pbtxt");
  ASSERT_TRUE(unset.ok()) << unset.status();
  EXPECT_EQ(unset->config.checkpoint().keep_last(), 2);
}

// docs/configs.md: ordered_sum's chunk_slots unset is 1, so a selection
// without options loads; an error inside a plugin's options left unset is
// located at the selection that holds them.
TEST(ConfigLoaderTest, APluginsUnsetOptionsTakeTheirDocumentedDefaults) {
  auto ordered = Load(std::string(kValid) + "reducer { name: \"ordered_sum\" }\n", "o.pbtxt");
  ASSERT_TRUE(ordered.ok()) << ordered.status();
  auto zero = Load(std::string(kValid) +
                       "reducer {\n  name: \"ordered_sum\"\n  options {\n"
                       "    [type.googleapis.com/receipt_parity.OrderedSumOptions] {"
                       " chunk_slots: 0 }\n  }\n}\n",
                   "o0.pbtxt");
  EXPECT_THAT(Message(zero), HasSubstr("o0.pbtxt:9:3: reducer.options: chunk_slots: must be "
                                       ">= 1, got 0"));
  // A nested field left unset is named where its message is written.
  auto unset = Load("world_size: 2\nglobal_batch: 4\nmodel { architecture: \"linear\" }\n"
                    "optimizer { sgd { learning_rate: 0.1 } }\n"
                    "data { synthetic { seed: 3 } validation_fraction: 0.25 }\n",
                    "u.pbtxt");
  EXPECT_THAT(Message(unset), HasSubstr("u.pbtxt:5:"));
}

// A written value that is not allowed is an error, never a silent default.
TEST(ConfigLoaderTest, WrittenZerosAreCheckedNotReplaced) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"epochs: 0", "z.pbtxt:7:1: epochs: must be >= 1"},
      {"precision: \"\"", "z.pbtxt:7:1: precision: unknown ''; known: fp32, bf16"},
      {"backend: \"\"", "z.pbtxt:7:1: backend: unknown ''"},
      {"run { log_every_updates: 0 }", "z.pbtxt:7:7: run.log_every_updates: must be >= 1, got 0"},
      {"run { collective_timeout_seconds: 0 }",
       "z.pbtxt:7:7: run.collective_timeout_seconds: must be >= 1"},
      {"run { heartbeat_timeout_seconds: 0 }",
       "z.pbtxt:7:7: run.heartbeat_timeout_seconds: must be in (0, 3600], got 0"},
      {"run { heartbeat_timeout_seconds: nan }",
       "z.pbtxt:7:7: run.heartbeat_timeout_seconds: must be in (0, 3600], got nan"},
      {"run { max_replacements: -1 }",
       "z.pbtxt:7:7: run.max_replacements: must be in [0, 1000], got -1"},
      {"run { intra_op_threads: 0 }", "z.pbtxt:7:7: run.intra_op_threads: must be >= 1"},
      {"run { master_addr: \"\" }", "z.pbtxt:7:7: run.master_addr: must not be empty"},
      {"run { launcher: \"slurm\" }",
       "z.pbtxt:7:7: run.launcher: unknown 'slurm'; known: local, mpirun"},
      {"run { fault { kill_point: \"mid_shard\" kill_rank: 1 kill_generation: 0 } }",
       "z.pbtxt:7:52: run.fault.kill_generation: must be >= 1, got 0"},
      {"run { fault { kill_point: \"sideways\" kill_rank: 1 } }",
       "z.pbtxt:7:15: run.fault.kill_point: "},
      {"run { fault { kill_point: \"mid_shard\" kill_rank: 2 } }",
       "run.fault.kill_rank: rank 2 does not exist with world_size 2"},
      {"run { fault { corrupt_rank: 0 corrupt_update: 0 corrupt_bit: 32 } }",
       "z.pbtxt:7:49: run.fault.corrupt_bit: must be a bit of a float32, 0 to 31; got 32"},
      {"run { fault { corrupt_rank: 0 corrupt_update: 0 corrupt_bit: -1 } }",
       "run.fault.corrupt_bit: must be a bit of a float32, 0 to 31; got -1"},
      {"run { fault { corrupt_rank: 2 corrupt_update: 0 corrupt_bit: 3 } }",
       "z.pbtxt:7:15: run.fault.corrupt_rank: rank 2 does not exist with world_size 2"},
      {"run { fault { corrupt_rank: 1 corrupt_update: -4 corrupt_bit: 3 } }",
       "run.fault.corrupt_update: must be >= 0, got -4"},
      {"run { fault { corrupt_bit: 3 } }",
       "z.pbtxt:7:7: run.fault: corrupt_rank is not set: a flipped bit needs corrupt_rank, "
       "corrupt_update and corrupt_bit"},
  };
  for (const auto& [line, expected] : cases) {
    auto loaded = Load(std::string(kValid) + line + "\n", "z.pbtxt");
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument) << line;
    EXPECT_THAT(Message(loaded), HasSubstr(expected)) << line;
  }
  auto world = Load(
      "world_size: 0 global_batch: 4 model { architecture: \"linear\" }\n"
      "data { synthetic { num_identities: 3 } }\n"
      "optimizer { sgd { learning_rate: 1 } }\n",
      "w.pbtxt");
  EXPECT_THAT(Message(world), HasSubstr("w.pbtxt:1:1: world_size: must be >= 1, got 0"));
}

constexpr char kManifestConfig[] = R"pb(
global_batch: 2
data { manifest_path: "MANIFEST" image_size: 16 }
model { architecture: "linear" }
optimizer { sgd { learning_rate: 0.1 } }
)pb";

// Writes `text` as `path`, making its folder.
void WriteConfigAt(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  ASSERT_TRUE(WriteFileAtomically(path, text).ok()) << path;
}

std::string ManifestConfig(const std::string& manifest_path) {
  std::string text = kManifestConfig;
  text.replace(text.find("MANIFEST"), 8, manifest_path);
  return text;
}

// Issue 15, item 2: `manifest_path: "receipts.csv"` in a config inside
// mydata/ was opened in the working directory.
TEST(ConfigLoaderTest, ARelativeManifestPathIsRelativeToTheConfigsFolder) {
  const std::string dir = ::testing::TempDir() + "/mydata";
  WriteConfigAt(dir + "/c.pbtxt", ManifestConfig("receipts.csv"));
  auto loaded = LoadTrainingConfig(dir + "/c.pbtxt");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->data.manifest_path(),
            std::filesystem::path(dir + "/receipts.csv").lexically_normal().string());
  // The config keeps what the file says (the fingerprint hashes it).
  EXPECT_EQ(loaded->config.data().manifest_path(), "receipts.csv");
  // Everything else of the data settings is the config's, defaults included.
  DataConfig rest = loaded->data;
  rest.set_manifest_path("receipts.csv");
  EXPECT_EQ(rest.SerializeAsString(), loaded->config.data().SerializeAsString());

  WriteConfigAt(dir + "/up.pbtxt", ManifestConfig("../common/r.csv"));
  auto up = LoadTrainingConfig(dir + "/up.pbtxt");
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_EQ(up->data.manifest_path(),
            std::filesystem::path(::testing::TempDir() + "/common/r.csv")
                .lexically_normal()
                .string());
}

TEST(ConfigLoaderTest, AnAbsoluteManifestPathStaysAsWritten) {
  auto loaded = Load(ManifestConfig("/data/receipts/r.csv"), "abs.pbtxt");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->data.manifest_path(), "/data/receipts/r.csv");
  EXPECT_EQ(loaded->config.data().manifest_path(), "/data/receipts/r.csv");
}

TEST(ConfigLoaderTest, TheSameConfigInTwoFoldersHashesTheSameButReadsItsOwnData) {
  const std::string a = ::testing::TempDir() + "/first/c.pbtxt";
  const std::string b = ::testing::TempDir() + "/second/c.pbtxt";
  WriteConfigAt(a, ManifestConfig("receipts.csv"));
  WriteConfigAt(b, ManifestConfig("receipts.csv"));
  auto first = LoadTrainingConfig(a);
  auto second = LoadTrainingConfig(b);
  ASSERT_TRUE(first.ok() && second.ok()) << first.status() << second.status();
  EXPECT_EQ(ConfigFingerprint(first->config), ConfigFingerprint(second->config));
  EXPECT_NE(first->data.manifest_path(), second->data.manifest_path());
}

TEST(ConfigLoaderTest, ASyntheticSourceIsTheConfigsOwn) {
  auto loaded = Load(kValid, "synthetic.pbtxt");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->data.SerializeAsString(), loaded->config.data().SerializeAsString());
  EXPECT_TRUE(loaded->plugin_libraries.empty());
}

TEST(ValidateTrainingConfigTest, AConfigBuiltInCodeGetsTheSameChecksNamedByItsName) {
  TrainingConfig config;
  config.set_global_batch(2);
  config.mutable_model()->set_architecture("linear");
  config.mutable_optimizer()->mutable_sgd()->set_learning_rate(0.1);
  config.mutable_data()->mutable_synthetic()->set_num_identities(5);
  auto good = ValidateTrainingConfig(config, "generated");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->config.sampler().name(), "masked_tail");
  EXPECT_EQ(good->locator->Where("global_batch"), "generated");

  // No config folder: a relative manifest path is used as it is.
  TrainingConfig manifest = config;
  manifest.mutable_data()->set_manifest_path("receipts.csv");
  auto in_code = ValidateTrainingConfig(manifest, "generated");
  ASSERT_TRUE(in_code.ok()) << in_code.status();
  EXPECT_EQ(in_code->data.manifest_path(), "receipts.csv");

  config.mutable_reducer()->set_name("nope");
  auto bad = ValidateTrainingConfig(config, "generated");
  EXPECT_THAT(bad.status().message(),
              HasSubstr("generated: reducer.name: no reducer plugin named 'nope'"));
}

TEST(ConfigFingerprintTest, IgnoresRunOptionsButNotTraining) {
  auto a = Load(kValid, "a");
  auto b = Load(std::string(kValid) + "run { output_dir: \"/tmp/x\" log_every_updates: 3 }\n" +
                    "checkpoint { every_updates: 5 keep_last: 4 }\n",
                "b");
  auto c = Load(std::string(kValid) + "seeds { sampler: 9 }\n", "c");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(ConfigFingerprint(a->config), ConfigFingerprint(b->config));
  EXPECT_NE(ConfigFingerprint(a->config), ConfigFingerprint(c->config));
  EXPECT_EQ(ConfigFingerprint(a->config).size(), 40u);
}

TEST(ConfigFingerprintTest, TheLoadedConfigCarriesItsFingerprintAndAChangedOneItsOwn) {
  auto a = Load(kValid, "a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->fingerprint, ConfigFingerprint(a->config));
  TrainingConfig other = a->config;
  other.mutable_seeds()->set_sampler(99);
  const LoadedConfig changed = WithTrainingConfig(*a, other);
  EXPECT_EQ(changed.fingerprint, ConfigFingerprint(other));
  EXPECT_NE(changed.fingerprint, a->fingerprint);
  EXPECT_EQ(changed.locator, a->locator);
}

TEST(ConfigFingerprintTest, DeviceAndBackendAreNotInIt) {
  auto a = Load(kValid, "a");
  ASSERT_TRUE(a.ok()) << a.status();
  // Built in code: loading a cuda config on a machine without a GPU is
  // refused (device_check.h), and the fingerprint does not need a load.
  TrainingConfig gpu = a->config;
  gpu.set_device("cuda");
  gpu.set_backend("nccl");
  EXPECT_EQ(ConfigFingerprint(gpu), ConfigFingerprint(a->config));
  TrainingConfig unset = a->config;
  unset.clear_device();
  EXPECT_EQ(ConfigFingerprint(unset), ConfigFingerprint(a->config));
  TrainingConfig other = a->config;
  other.set_global_batch(other.global_batch() * 2);
  EXPECT_NE(ConfigFingerprint(other), ConfigFingerprint(a->config));
}

TEST(ConfigFingerprintTest, ExactParityIsAnotherConfig) {
  auto a = Load(kValid, "a");
  auto exact = Load(std::string(kValid) + "parity { rtol: 0 atol: 0 }\n", "exact");
  auto written = Load(std::string(kValid) + "parity { rtol: 1e-6 atol: 1e-7 }\n", "written");
  ASSERT_TRUE(a.ok() && exact.ok() && written.ok());
  EXPECT_NE(ConfigFingerprint(a->config), ConfigFingerprint(exact->config));
  EXPECT_EQ(ConfigFingerprint(a->config), ConfigFingerprint(written->config));
}

TEST(ConfigFingerprintTest, ReferenceConfigIsOneWorker) {
  auto a = Load(std::string(kValid) + "local_batch_sizes: [3, 1]\n", "a");
  ASSERT_TRUE(a.ok()) << a.status();
  TrainingConfig reference = ReferenceConfig(a->config);
  EXPECT_EQ(reference.world_size(), 1);
  EXPECT_TRUE(ValidateConfig(reference).ok());
  EXPECT_EQ(LocalBatchSizes(reference), (std::vector<int>{4}));
}

}  // namespace
}  // namespace receipt_parity
