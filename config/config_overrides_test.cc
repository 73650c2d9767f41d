#include "config/config_overrides.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "model/model_options.pb.h"
#include "optimizers/optimizer_options.pb.h"
#include "reducers/reducer_options.pb.h"

namespace receipt_parity {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TrainingConfig File() {
  TrainingConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    data { synthetic { num_identities: 40 seed: 3 } image_size: 16 }
    model { architecture: "cnn" conv_channels: [4] hidden_units: [8] }
    optimizer { sgd { learning_rate: 0.05 momentum: 0.9 } }
    global_batch: 4
    world_size: 2
    checkpoint { every_updates: 2 keep_last: 3 }
  )pb", &config));
  return config;
}

absl::Status Apply(const std::vector<std::string>& given, TrainingConfig* config) {
  absl::StatusOr<std::vector<ConfigOverride>> overrides = ParseConfigOverrides(given);
  if (!overrides.ok()) return overrides.status();
  return ApplyConfigOverrides(*overrides, config);
}

TEST(ConfigOverridesTest, ScalarsRepeatedFieldsAndMessagesAreReplaced) {
  TrainingConfig config = File();
  const absl::Status applied = Apply({"optimizer.sgd.learning_rate=0.1", "world_size=3",
                     "model.conv_channels=[8, 16]", "checkpoint={ every_updates: 5 }",
                     "data.synthetic.num_identities=60", "precision=\"bf16\"",
                     "sampler.name=duplicate_pad"},
                    &config);
  ASSERT_TRUE(applied.ok()) << applied;
  EXPECT_EQ(config.optimizer().sgd().learning_rate(), 0.1);
  EXPECT_EQ(config.optimizer().sgd().momentum(), 0.9);  // the rest of the message stays
  EXPECT_EQ(config.world_size(), 3);
  EXPECT_THAT(config.model().conv_channels(), testing::ElementsAre(8, 16));  // not appended
  EXPECT_EQ(config.checkpoint().every_updates(), 5);
  EXPECT_FALSE(config.checkpoint().has_keep_last());  // the whole message replaced
  EXPECT_EQ(config.data().synthetic().num_identities(), 60);
  EXPECT_EQ(config.data().image_size(), 16);
  EXPECT_EQ(config.precision(), "bf16");
  EXPECT_EQ(config.sampler().name(), "duplicate_pad");
}

TEST(ConfigOverridesTest, ALaterOverrideReplacesAnEarlierOne) {
  TrainingConfig config = File();
  ASSERT_TRUE(Apply({"world_size=3", "world_size=4"}, &config).ok());
  EXPECT_EQ(config.world_size(), 4);
}

TEST(ConfigOverridesTest, AnUnsetMessageIsMadeAndAnEmptyListClears) {
  TrainingConfig config = File();
  ASSERT_TRUE(Apply({"clip_grad_norm.max_norm=1.5", "model.hidden_units=[]"}, &config).ok());
  EXPECT_EQ(config.clip_grad_norm().max_norm(), 1.5);
  EXPECT_TRUE(config.model().hidden_units().empty());
}

struct Refused {
  std::string given;
  std::string message;
};

TEST(ConfigOverridesTest, BadOverridesNameThemselves) {
  const std::vector<Refused> cases = {
      {"world_size", "--set world_size: expected FIELD_PATH=VALUE"},
      {"=3", "--set =3: expected FIELD_PATH=VALUE"},
      {"wrold_size=3", "--set wrold_size=3: no field 'wrold_size' in the config; close names: "
                       "world_size"},
      {"optimizer.sgd.lerning_rate=0.1",
       "--set optimizer.sgd.lerning_rate=0.1: no field 'lerning_rate' in optimizer.sgd; close "
       "names: learning_rate"},
      {"world_size=three", "--set world_size=three: not a value of world_size: "},
      {"optimizer.sgd.learning_rate=\"fast\"",
       "--set optimizer.sgd.learning_rate=\"fast\": not a value of optimizer.sgd.learning_rate"},
      {"model.conv_channels.x=1", "--set model.conv_channels.x=1: model.conv_channels is "
                                  "repeated: set it whole"},
      {"world_size.x=1", "--set world_size.x=1: world_size is not a message"},
      {"optimizer.adamw.learning_rate=0.001",
       "--set optimizer.adamw.learning_rate=0.001: conflicts with optimizer.sgd, which the "
       "config sets (one of kind)"},
      {"data.manifest_path=\"r.csv\"",
       "--set data.manifest_path=\"r.csv\": conflicts with data.synthetic, which the config sets"},
  };
  for (const Refused& c : cases) {
    SCOPED_TRACE(c.given);
    TrainingConfig config = File();
    absl::Status refused = Apply({c.given}, &config);
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(refused.message()), StartsWith(c.message));
  }
}

// The oneof's other member is fine once the whole message is named.
// One value in any of its forms is one value.
TEST(ConfigOverridesTest, OneValueInEveryFormIsAccepted) {
  TrainingConfig config = File();
  const absl::Status applied =
      Apply({"optimizer.sgd.momentum=-0.5", "data.synthetic.seed=7", "precision=\"b\" \"f16\"",
             "model.conv_channels=[ 8, 16 ]", "checkpoint={ every_updates: 5 keep_last: 2 }",
             "sampler.name=masked_tail", "optimizer.sgd.learning_rate=-1e-3"},
            &config);
  ASSERT_TRUE(applied.ok()) << applied;
  EXPECT_EQ(config.precision(), "bf16");
  EXPECT_EQ(config.checkpoint().keep_last(), 2);
  EXPECT_EQ(config.optimizer().sgd().learning_rate(), -1e-3);
}

TEST(ConfigOverridesTest, AWholeMessageSwitchesItsOneof) {
  TrainingConfig config = File();
  ASSERT_TRUE(Apply({"optimizer={ adamw { learning_rate: 0.001 } }"}, &config).ok());
  EXPECT_FALSE(config.optimizer().has_sgd());
  EXPECT_EQ(config.optimizer().adamw().learning_rate(), 0.001);
}

// One --set sets one field: text after the value would set others behind
// the override's back (and be recorded verbatim while doing so).
TEST(ConfigOverridesTest, AnythingAfterTheValueIsRefusedNamingWhatItWouldSet) {
  struct Refused {
    const char* given;
    const char* message;
  };
  const Refused cases[] = {
      {"epochs=2 world_size: 3",
       "--set epochs=2 world_size: 3: the value of epochs is followed by more ('world_size: "
       "3'): one --set sets one field to one value"},
      {"optimizer.sgd.learning_rate=0.02 momentum: 0.0",
       "--set optimizer.sgd.learning_rate=0.02 momentum: 0.0: the value of "
       "optimizer.sgd.learning_rate is followed by more ('momentum: 0.0')"},
      {"checkpoint={ every_updates: 4 } world_size: 3",
       "--set checkpoint={ every_updates: 4 } world_size: 3: the value of checkpoint is "
       "followed by more ('world_size: 3')"},
      {"model.conv_channels=[8] [16]",
       "--set model.conv_channels=[8] [16]: not a value of model.conv_channels"},
      {"sampler.name=\"a\" b", "--set sampler.name=\"a\" b: not a value of sampler.name"},
  };
  for (const Refused& c : cases) {
    SCOPED_TRACE(c.given);
    TrainingConfig config = File();
    const TrainingConfig before = config;
    absl::Status refused = Apply({c.given}, &config);
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(refused.message()), StartsWith(c.message));
    EXPECT_EQ(config.world_size(), before.world_size());
    EXPECT_EQ(config.optimizer().sgd().momentum(), before.optimizer().sgd().momentum());
  }
}

TrainingConfig PluginForms() {
  TrainingConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    optimizer {
      name: "adamw"
      options { [type.googleapis.com/receipt_parity.AdamWOptions] { lr: 0.001 eps: 1e-7 } }
    }
    reducer { name: "ordered_sum" }
  )pb", &config));
  return config;
}

// A path through a plugin's `options` goes on inside the options type: the
// one the options hold, or, where they hold none yet, the registered
// plugin's.
TEST(ConfigOverridesTest, APathReachesIntoAPluginsOwnOptions) {
  TrainingConfig config = PluginForms();
  const absl::Status applied =
      Apply({"optimizer.options.lr=0.003", "reducer.options.chunk_slots=4"}, &config);
  ASSERT_TRUE(applied.ok()) << applied;
  AdamWOptions adamw;
  ASSERT_TRUE(config.optimizer().options().UnpackTo(&adamw));
  EXPECT_EQ(adamw.lr(), 0.003);
  EXPECT_EQ(adamw.eps(), 1e-7);  // the rest of the options stay
  OrderedSumOptions ordered;
  ASSERT_TRUE(config.reducer().options().UnpackTo(&ordered));
  EXPECT_EQ(ordered.chunk_slots(), 4);
}

TEST(ConfigOverridesTest, APluginOptionThatDoesNotExistNamesTheRealFields) {
  struct Refused {
    const char* given;
    const char* message;
  };
  const Refused cases[] = {
      {"optimizer.options.learning_rate=0.003",
       "--set optimizer.options.learning_rate=0.003: no field 'learning_rate' in "
       "optimizer.options (receipt_parity.AdamWOptions); close names: "},
      {"reducer.options.chunks=4",
       "--set reducer.options.chunks=4: no field 'chunks' in reducer.options "
       "(receipt_parity.OrderedSumOptions); close names: chunk_slots"},
      {"optimizer.options.lr=fast",
       "--set optimizer.options.lr=fast: not a value of optimizer.options "
       "(receipt_parity.AdamWOptions).lr"},
  };
  for (const Refused& c : cases) {
    SCOPED_TRACE(c.given);
    TrainingConfig config = PluginForms();
    absl::Status refused = Apply({c.given}, &config);
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(refused.message()), StartsWith(c.message));
  }
  // The config form names no plugin: its options have no type to reach.
  TrainingConfig config = File();
  absl::Status refused = Apply({"optimizer.options.lr=0.003"}, &config);
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("optimizer.options names no plugin whose options it could hold: set "
                        "optimizer.name first"));
}

// The short form is the plugin form's alias: an override written for
// optimizer.sgd or optimizer.adamw sets the same option of a config that
// selects that optimizer by name.
TEST(ConfigOverridesTest, AShortFormPathSetsThePluginFormsOption) {
  TrainingConfig config = PluginForms();
  ASSERT_TRUE(Apply({"optimizer.adamw.learning_rate=0.02", "optimizer.adamw.beta2=0.99"},
                    &config)
                  .ok());
  AdamWOptions adamw;
  ASSERT_TRUE(config.optimizer().options().UnpackTo(&adamw));
  EXPECT_EQ(adamw.lr(), 0.02);
  EXPECT_EQ(adamw.beta2(), 0.99);
  EXPECT_FALSE(config.optimizer().has_adamw());
  // 0 is the short form's default but the plugin form's 0: refused.
  absl::Status refused = Apply({"optimizer.adamw.beta1=0"}, &config);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("beta1 0 means 0, not the default: write optimizer.options.beta1"));
  // A built-in model in the plugin form: model.X is its options' X.
  TrainingConfig cnn;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "model { name: 'cnn' options { [type.googleapis.com/receipt_parity.CnnModelOptions] "
      "{ conv_channels: [8] hidden_units: [16] } } }",
      &cnn));
  ASSERT_TRUE(Apply({"model.batch_norm=sync", "model.conv_channels=[4, 6]"}, &cnn).ok());
  CnnModelOptions options;
  ASSERT_TRUE(cnn.model().options().UnpackTo(&options));
  EXPECT_EQ(options.batch_norm(), "sync");
  EXPECT_EQ(options.conv_channels_size(), 2);
  EXPECT_EQ(options.hidden_units(0), 16);
  EXPECT_TRUE(cnn.model().architecture().empty());
  // On another optimizer the short path is the short form's, as before.
  TrainingConfig sgd_config = File();
  ASSERT_TRUE(Apply({"optimizer.sgd.learning_rate=0.5"}, &sgd_config).ok());
  EXPECT_EQ(sgd_config.optimizer().sgd().learning_rate(), 0.5);
}

}  // namespace
}  // namespace receipt_parity
