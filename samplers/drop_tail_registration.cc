// Registers the drop_tail sampler policy (linked through
// :drop_tail_registration).
#include "plugins/plugin_registry.h"
#include "samplers/drop_tail.h"

namespace receipt_parity {
namespace {

PluginRegistrar<DropTailFactory, SamplerPolicy> registrar;

}  // namespace
}  // namespace receipt_parity
