// Registers the cnn model plugin (linked through :cnn_registration).
#include "model/builtin_models.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

PluginRegistrar<CnnModelFactory, ClassifierBuilder> registrar;

}  // namespace
}  // namespace receipt_parity
