// Registers the linear model plugin (linked through :linear_registration).
#include "model/builtin_models.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

PluginRegistrar<LinearModelFactory, ClassifierBuilder> registrar;

}  // namespace
}  // namespace receipt_parity
