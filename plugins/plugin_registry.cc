#include "plugins/plugin_registry.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "absl/strings/str_join.h"

namespace receipt_parity {
namespace plugin_registry_internal {
namespace {

struct KindRegistry {
  std::map<std::string, FactoryBase*> by_name;
  // Names registered more than once, for CheckRegistries().
  std::set<std::string> duplicates;
};

struct Registries {
  std::mutex mu;
  std::map<std::string, KindRegistry> kinds;
};

// Built on first use, never destroyed: registrars may run before any other
// static in this file is constructed, and lookups may run during exit.
Registries& Global() {
  static Registries* registries = new Registries();
  return *registries;
}

}  // namespace

void Add(const char* kind, FactoryBase* factory) {
  Registries& r = Global();
  std::lock_guard<std::mutex> lock(r.mu);
  KindRegistry& k = r.kinds[kind];
  auto [it, inserted] = k.by_name.emplace(factory->name(), factory);
  if (!inserted) k.duplicates.insert(factory->name());
}

absl::StatusOr<FactoryBase*> Find(const char* kind, const std::string& name) {
  Registries& r = Global();
  std::lock_guard<std::mutex> lock(r.mu);
  auto kit = r.kinds.find(kind);
  std::vector<std::string> names;
  if (kit != r.kinds.end()) {
    auto it = kit->second.by_name.find(name);
    if (it != kit->second.by_name.end()) return it->second;
    for (const auto& [n, f] : kit->second.by_name) names.push_back(n);
  }
  return absl::NotFoundError(absl::StrCat(
      "no ", kind, " plugin named '", name, "'; registered: ",
      names.empty() ? "(none)" : absl::StrJoin(names, ", ")));
}

FactoryBase* Replace(const char* kind, FactoryBase* factory) {
  Registries& r = Global();
  std::lock_guard<std::mutex> lock(r.mu);
  FactoryBase*& slot = r.kinds[kind].by_name[factory->name()];
  FactoryBase* previous = slot;
  slot = factory;
  return previous;
}

void Remove(const char* kind, const std::string& name) {
  Registries& r = Global();
  std::lock_guard<std::mutex> lock(r.mu);
  r.kinds[kind].by_name.erase(name);
}

}  // namespace plugin_registry_internal

std::vector<std::string> RegisteredNames(const char* kind) {
  auto& r = plugin_registry_internal::Global();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  auto it = r.kinds.find(kind);
  if (it == r.kinds.end()) return names;
  for (const auto& [name, factory] : it->second.by_name) names.push_back(name);
  return names;
}

std::vector<std::string> RegisteredKinds() {
  auto& r = plugin_registry_internal::Global();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> kinds;
  for (const auto& [kind, registry] : r.kinds) {
    if (!registry.by_name.empty()) kinds.push_back(kind);
  }
  return kinds;
}

absl::Status CheckRegistries() {
  auto& r = plugin_registry_internal::Global();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> problems;
  for (const auto& [kind, registry] : r.kinds) {
    for (const std::string& name : registry.duplicates) {
      problems.push_back(absl::StrCat(kind, " '", name, "'"));
    }
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::AlreadyExistsError(
      absl::StrCat("plugin names registered more than once: ",
                   absl::StrJoin(problems, ", ")));
}

}  // namespace receipt_parity
