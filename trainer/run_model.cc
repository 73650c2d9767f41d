#include "trainer/run_model.h"

#include <atomic>

namespace receipt_parity {
namespace {

std::atomic<ModelBuilder>& InstalledBuilder() {
  static std::atomic<ModelBuilder> builder{nullptr};
  return builder;
}

}  // namespace

ModelBuilder InstallModelBuilderForTesting(ModelBuilder builder) {
  return InstalledBuilder().exchange(builder);
}

absl::StatusOr<std::shared_ptr<Classifier>> BuildRunModel(const ModelSettings& settings) {
  if (ModelBuilder builder = InstalledBuilder().load(); builder != nullptr) {
    return builder(settings);
  }
  return BuildClassifier(settings);
}

}  // namespace receipt_parity
