#include "config/plugin_kinds.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/classifier_builder.h"
#include "optimizers/optimizer_plugin.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

// One vocabulary: the registry's kinds (each interface's kKind) are exactly
// the table's and the model's (ModelConfig selects it, config/run_model.h),
// and every default is a registered plugin of its kind.
TEST(PluginKindsTest, TheTableIsTheRegistrysKindsWithRegisteredDefaults) {
  std::set<std::string> table;
  for (const PluginKind& kind : PluginKinds()) {
    table.insert(kind.kind);
    EXPECT_THAT(RegisteredNames(kind.kind), ::testing::Contains(kind.default_name))
        << kind.kind;
  }
  EXPECT_EQ(table.size(), PluginKinds().size());
  // The model and the optimizer are selected by their own messages
  // (config/run_model.h, config/run_optimizer.h).
  for (const char* own : {ClassifierBuilder::kKind, OptimizerPlugin::kKind}) {
    EXPECT_EQ(table.count(own), 0u) << own;
    table.insert(own);
  }
  const std::vector<std::string> registered = RegisteredKinds();
  EXPECT_EQ(table, std::set<std::string>(registered.begin(), registered.end()));
}

TEST(PluginKindsTest, SortedByKindAndEachRowReadsItsOwnField) {
  TrainingConfig config;
  int i = 0;
  for (const PluginKind& kind : PluginKinds()) {
    kind.mutable_selection(&config)->set_name(absl::StrCat("plugin-", i++));
  }
  EXPECT_EQ(config.loss_weighting().name(), "plugin-0");
  EXPECT_EQ(config.lr_schedule().name(), "plugin-1");
  EXPECT_EQ(config.metric_dedup().name(), "plugin-2");
  EXPECT_EQ(config.reducer().name(), "plugin-3");
  EXPECT_EQ(config.sampler().name(), "plugin-4");
  EXPECT_EQ(SelectedPluginNames(config),
            (std::vector<std::pair<std::string, std::string>>{
                {"loss_weighting", "plugin-0"},
                {"lr_schedule", "plugin-1"},
                {"metric_dedup", "plugin-2"},
                {"reducer", "plugin-3"},
                {"sampler_policy", "plugin-4"}}));
  PluginNames names;
  for (const PluginKind& kind : PluginKinds()) {
    *kind.run_manifest_name(&names) = kind.selection(config).name();
    // The run manifest's key is the config field's name.
    EXPECT_NE(PluginNames::descriptor()->FindFieldByName(kind.config_field), nullptr);
    EXPECT_NE(TrainingConfig::descriptor()->FindFieldByName(kind.config_field), nullptr);
  }
  EXPECT_EQ(names.sampler(), "plugin-4");
  EXPECT_EQ(names.lr_schedule(), "plugin-1");
  EXPECT_EQ(names.loss_weighting(), "plugin-0");
  EXPECT_EQ(FindPluginKind("sampler_policy").config_field, std::string("sampler"));
}

}  // namespace
}  // namespace receipt_parity
