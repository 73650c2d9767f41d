// Registers the python_module model plugin (linked through
// :python_module_registration).
#include "model/python_module_model.h"
#include "plugins/plugin_registry.h"

namespace receipt_parity {
namespace {

PluginRegistrar<PythonModuleModelFactory, ClassifierBuilder> registrar;

}  // namespace
}  // namespace receipt_parity
