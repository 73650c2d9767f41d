// Typed plugin factories.
//
// A plugin of some kind (sampler policy, loss weighting, reducer, metric
// dedup) is made by a factory that has a stable name, knows its own options
// message type, and builds the plugin from options of exactly that type.
//
//   class MaskedTailFactory
//       : public TypedFactory<SamplerPolicy, MaskedTailOptions> {
//    public:
//     std::string name() const override { return "masked_tail"; }
//    private:
//     absl::StatusOr<std::unique_ptr<SamplerPolicy>> CreateTyped(
//         const MaskedTailOptions& options) const override;
//   };
//
// `Product` names its kind with a `static constexpr char kKind[]` member;
// the registry keeps one namespace of names per kind.
//
// Thread safety: factories are immutable after construction; every method
// is safe to call concurrently.
#ifndef RECEIPT_PARITY_PLUGINS_PLUGIN_FACTORY_H_
#define RECEIPT_PARITY_PLUGINS_PLUGIN_FACTORY_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/message.h"

namespace receipt_parity {

// What the registry stores: the kind-independent part of a factory.
class FactoryBase {
 public:
  virtual ~FactoryBase() = default;

  // Stable: written into manifests and reports.
  virtual std::string name() const = 0;

  // A default-valued instance of this plugin's options message. The caller
  // owns it.
  virtual std::unique_ptr<google::protobuf::Message> CreateEmptyOptions()
      const = 0;
};

// A factory of plugins of one kind.
template <typename Product>
class Factory : public FactoryBase {
 public:
  // Builds the plugin. `options` must be of the type CreateEmptyOptions()
  // returns; anything else is InvalidArgument. Invalid option values are
  // InvalidArgument naming the field.
  virtual absl::StatusOr<std::unique_ptr<Product>> Create(
      const google::protobuf::Message& options) const = 0;
};

// Downcasts once so the plugin body only sees its own options type.
template <typename Product, typename Options>
class TypedFactory : public Factory<Product> {
 public:
  std::unique_ptr<google::protobuf::Message> CreateEmptyOptions()
      const final {
    return std::make_unique<Options>();
  }

  absl::StatusOr<std::unique_ptr<Product>> Create(
      const google::protobuf::Message& options) const final {
    if (options.GetDescriptor() != Options::descriptor()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "plugin '", this->name(), "' takes options of type ",
          Options::descriptor()->full_name(), ", got ",
          options.GetDescriptor()->full_name()));
    }
    return CreateTyped(static_cast<const Options&>(options));
  }

 private:
  virtual absl::StatusOr<std::unique_ptr<Product>> CreateTyped(
      const Options& options) const = 0;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_PLUGINS_PLUGIN_FACTORY_H_
