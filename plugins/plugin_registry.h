// Registries of plugin factories, one per plugin kind.
//
// Registration happens from static initialisers in `alwayslink` targets
// (see plugins/plugin.bzl) and from shared libraries loaded at start
// (plugins/plugin_library.h). A registrar only inserts a pointer: no
// logging, no LibTorch calls, no error handling during static
// initialisation. Duplicate names are recorded and reported by
// CheckRegistries(), which every binary calls before its first lookup.
//
// Registries are built on first use and never destroyed.
//
// Thread safety: registration and lookups are serialised by a mutex;
// factories are never unregistered, so returned pointers stay valid
// (except under a test's ScopedFactoryOverride, see below).
#ifndef RECEIPT_PARITY_PLUGINS_PLUGIN_REGISTRY_H_
#define RECEIPT_PARITY_PLUGINS_PLUGIN_REGISTRY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "plugins/plugin_factory.h"

namespace receipt_parity {
namespace plugin_registry_internal {

// Type-erased core, keyed by the kind's name. Defined once, in the host
// binary: a shared-library plugin resolves these symbols from the host.
void Add(const char* kind, FactoryBase* factory);
absl::StatusOr<FactoryBase*> Find(const char* kind, const std::string& name);
// Replaces the factory registered as `factory->name()`; returns the old one
// (nullptr if none). For tests only.
FactoryBase* Replace(const char* kind, FactoryBase* factory);

}  // namespace plugin_registry_internal

// The registered names of a kind, sorted.
std::vector<std::string> RegisteredNames(const char* kind);

// The kinds that have at least one registration, sorted.
std::vector<std::string> RegisteredKinds();

// OK unless some kind has two factories of the same name; the error names
// every duplicate.
absl::Status CheckRegistries();

// Looks a factory of `Product`'s kind up by name. NotFound lists the names
// that exist.
template <typename Product>
absl::StatusOr<const Factory<Product>*> FindFactory(const std::string& name) {
  absl::StatusOr<FactoryBase*> base =
      plugin_registry_internal::Find(Product::kKind, name);
  if (!base.ok()) return base.status();
  auto* typed = dynamic_cast<const Factory<Product>*>(*base);
  if (typed == nullptr) {
    return absl::InternalError(absl::StrCat(
        "plugin '", name, "' is registered as a ", Product::kKind,
        " but its factory makes a different type"));
  }
  return typed;
}

// Registers a default-constructed FactoryT at static-initialisation time:
//   static PluginRegistrar<MaskedTailFactory, SamplerPolicy> registrar;
template <typename FactoryT, typename Product>
class PluginRegistrar {
 public:
  PluginRegistrar() {
    plugin_registry_internal::Add(Product::kKind, new FactoryT());
  }
};

// Test seam: while alive, `factory` answers for its name in Product's kind;
// the previous factory (or none) comes back on destruction.
// REQUIRES: `factory` outlives this object.
template <typename Product>
class ScopedFactoryOverride {
 public:
  explicit ScopedFactoryOverride(Factory<Product>* factory)
      : factory_(factory),
        previous_(plugin_registry_internal::Replace(Product::kKind, factory)) {}
  ~ScopedFactoryOverride() {
    if (previous_ != nullptr) {
      plugin_registry_internal::Replace(Product::kKind, previous_);
    } else {
      RemoveForTest();
    }
  }
  ScopedFactoryOverride(const ScopedFactoryOverride&) = delete;
  ScopedFactoryOverride& operator=(const ScopedFactoryOverride&) = delete;

 private:
  void RemoveForTest();
  Factory<Product>* factory_;
  FactoryBase* previous_;
};

namespace plugin_registry_internal {
void Remove(const char* kind, const std::string& name);
}  // namespace plugin_registry_internal

template <typename Product>
void ScopedFactoryOverride<Product>::RemoveForTest() {
  plugin_registry_internal::Remove(Product::kKind, factory_->name());
}

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_PLUGINS_PLUGIN_REGISTRY_H_
