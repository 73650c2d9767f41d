// Registers the torchscript model plugin (linked through
// :torchscript_registration).
#include "model/torchscript_model.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

PluginRegistrar<TorchScriptModelFactory, ClassifierBuilder> registrar;

}  // namespace
}  // namespace receipt_parity
