// The masked_tail sampler policy: DistributedSampler's order, stride and
// padding, but the pad slots are valid=false: computed, weighing zero. No
// example is trained twice in an epoch, and every rank still has the same
// slot count and update boundaries.
// Options: MaskedTailOptions (samplers/sampler_options.proto); the exact order
// is in samplers/distributed_order.h.
#ifndef RECEIPT_PARITY_SAMPLERS_MASKED_TAIL_H_
#define RECEIPT_PARITY_SAMPLERS_MASKED_TAIL_H_

#include <string>

#include "samplers/distributed_order.h"
#include "samplers/sampler_options.pb.h"

namespace receipt_parity {

class MaskedTailFactory final
    : public DistributedSamplerFactory<MaskedTailOptions,
                                       TailHandling::kMaskedTail> {
 public:
  // Stable: written into manifests and audits.
  std::string name() const override { return "masked_tail"; }
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_SAMPLERS_MASKED_TAIL_H_
