// Registers the mlp model plugin (linked through :mlp_registration).
#include "model/builtin_models.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

PluginRegistrar<MlpModelFactory, ClassifierBuilder> registrar;

}  // namespace
}  // namespace receipt_parity
