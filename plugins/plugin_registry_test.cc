#include "plugins/plugin_registry.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/any.pb.h"
#include "gtest/gtest.h"
#include "plugins/plugin_selection.h"
#include "plugins/test_options.pb.h"

namespace receipt_parity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A toy plugin kind, so the test does not depend on any real plugin.
class Greeter {
 public:
  static constexpr char kKind[] = "greeter_for_test";
  explicit Greeter(std::string text) : text_(std::move(text)) {}
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

class HelloFactory : public TypedFactory<Greeter, testing::GreeterOptions> {
 public:
  std::string name() const override { return "hello"; }

 private:
  absl::StatusOr<std::unique_ptr<Greeter>> CreateTyped(
      const testing::GreeterOptions& options) const override {
    if (options.greeting() == "forbidden") {
      return absl::InvalidArgumentError("greeting: 'forbidden' is not allowed");
    }
    return std::make_unique<Greeter>(
        options.greeting().empty() ? "hello" : options.greeting());
  }
};

class ByeFactory : public TypedFactory<Greeter, testing::GreeterOptions> {
 public:
  std::string name() const override { return "bye"; }

 private:
  absl::StatusOr<std::unique_ptr<Greeter>> CreateTyped(
      const testing::GreeterOptions&) const override {
    return std::make_unique<Greeter>("bye");
  }
};

static PluginRegistrar<HelloFactory, Greeter> hello_registrar;
static PluginRegistrar<ByeFactory, Greeter> bye_registrar;

TEST(PluginRegistryTest, FindsRegisteredFactoriesByName) {
  EXPECT_THAT(RegisteredNames(Greeter::kKind), ElementsAre("bye", "hello"));
  absl::StatusOr<const Factory<Greeter>*> factory =
      FindFactory<Greeter>("hello");
  ASSERT_TRUE(factory.ok()) << factory.status();
  EXPECT_EQ((*factory)->name(), "hello");
}

TEST(PluginRegistryTest, UnknownNameListsTheNamesThatExist) {
  absl::StatusOr<const Factory<Greeter>*> factory =
      FindFactory<Greeter>("howdy");
  ASSERT_EQ(factory.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(factory.status().message(), HasSubstr("'howdy'"));
  EXPECT_THAT(factory.status().message(), HasSubstr("registered: bye, hello"));
}

TEST(PluginRegistryTest, DuplicateNameIsReportedByCheckRegistries) {
  ASSERT_TRUE(CheckRegistries().ok());
  // A second registration under an existing name, as a careless plugin
  // library would make.
  plugin_registry_internal::Add(Greeter::kKind, new HelloFactory());
  absl::Status status = CheckRegistries();
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(status.message(), HasSubstr("greeter_for_test 'hello'"));
}

TEST(PluginRegistryTest, TypedFactoryRejectsOptionsOfAnotherType) {
  HelloFactory factory;
  testing::OtherOptions other;
  absl::StatusOr<std::unique_ptr<Greeter>> greeter = factory.Create(other);
  EXPECT_EQ(greeter.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(greeter.status().message(),
              HasSubstr("receipt_parity.testing.GreeterOptions"));
}

TEST(PluginSelectionTest, UnpacksTypedOptions) {
  PluginSelection selection;
  selection.set_name("hello");
  testing::GreeterOptions options;
  options.set_greeting("good morning");
  selection.mutable_options()->PackFrom(options);
  auto greeter = CreateSelectedPlugin<Greeter>(selection, "greeter");
  ASSERT_TRUE(greeter.ok()) << greeter.status();
  EXPECT_EQ((*greeter)->text(), "good morning");
}

TEST(PluginSelectionTest, AbsentOptionsMeanDefaults) {
  PluginSelection selection;
  selection.set_name("hello");
  auto greeter = CreateSelectedPlugin<Greeter>(selection, "greeter");
  ASSERT_TRUE(greeter.ok()) << greeter.status();
  EXPECT_EQ((*greeter)->text(), "hello");
}

TEST(PluginSelectionTest, ErrorsNameTheConfigField) {
  PluginSelection selection;
  selection.set_name("nope");
  auto missing = CreateSelectedPlugin<Greeter>(selection, "greeter");
  EXPECT_THAT(missing.status().message(), HasSubstr("greeter.name: "));

  selection.set_name("hello");
  testing::OtherOptions other;
  selection.mutable_options()->PackFrom(other);
  auto wrong_type = CreateSelectedPlugin<Greeter>(selection, "greeter");
  EXPECT_EQ(wrong_type.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong_type.status().message(), HasSubstr("greeter.options: "));

  testing::GreeterOptions forbidden;
  forbidden.set_greeting("forbidden");
  selection.mutable_options()->PackFrom(forbidden);
  auto invalid = CreateSelectedPlugin<Greeter>(selection, "greeter");
  EXPECT_THAT(invalid.status().message(),
              HasSubstr("greeter.options: greeting: 'forbidden'"));
}

TEST(ScopedFactoryOverrideTest, SwapsAPluginAndRestoresIt) {
  class LoudHello : public TypedFactory<Greeter, testing::GreeterOptions> {
   public:
    std::string name() const override { return "hello"; }

   private:
    absl::StatusOr<std::unique_ptr<Greeter>> CreateTyped(
        const testing::GreeterOptions&) const override {
      return std::make_unique<Greeter>("HELLO");
    }
  };
  LoudHello loud;
  testing::GreeterOptions options;
  {
    ScopedFactoryOverride<Greeter> swap(&loud);
    EXPECT_EQ((*(*FindFactory<Greeter>("hello"))->Create(options))->text(),
              "HELLO");
  }
  EXPECT_EQ((*(*FindFactory<Greeter>("hello"))->Create(options))->text(),
            "hello");

  class Fresh : public TypedFactory<Greeter, testing::GreeterOptions> {
   public:
    std::string name() const override { return "fresh"; }

   private:
    absl::StatusOr<std::unique_ptr<Greeter>> CreateTyped(
        const testing::GreeterOptions&) const override {
      return std::make_unique<Greeter>("fresh");
    }
  };
  Fresh fresh;
  {
    ScopedFactoryOverride<Greeter> add(&fresh);
    EXPECT_TRUE(FindFactory<Greeter>("fresh").ok());
  }
  EXPECT_FALSE(FindFactory<Greeter>("fresh").ok());
}

}  // namespace
}  // namespace receipt_parity
