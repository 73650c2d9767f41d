// Registers the masked_tail sampler policy (linked through
// :masked_tail_registration).
#include "plugins/plugin_registry.h"
#include "samplers/masked_tail.h"

namespace receipt_parity {
namespace {

PluginRegistrar<MaskedTailFactory, SamplerPolicy> registrar;

}  // namespace
}  // namespace receipt_parity
