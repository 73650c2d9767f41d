// Registers the duplicate_pad sampler policy (linked through
// :duplicate_pad_registration).
#include "plugins/plugin_registry.h"
#include "samplers/duplicate_pad.h"

namespace receipt_parity {
namespace {

PluginRegistrar<DuplicatePadFactory, SamplerPolicy> registrar;

}  // namespace
}  // namespace receipt_parity
