// Registers the global_batches sampler policy (linked through
// :global_batches_registration).
#include "plugins/plugin_registry.h"
#include "samplers/global_batches.h"

namespace receipt_parity {
namespace {

PluginRegistrar<GlobalBatchesFactory, SamplerPolicy> registrar;

}  // namespace
}  // namespace receipt_parity
