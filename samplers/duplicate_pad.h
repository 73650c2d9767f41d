// The duplicate_pad sampler policy: DistributedSampler(drop_last=False): the
// epoch is padded to a multiple of the world size by repeating the head of
// the permutation, and the repeated examples are trained (valid) twice.
// Options: DuplicatePadOptions (samplers/sampler_options.proto); the exact
// order is in samplers/distributed_order.h.
#ifndef RECEIPT_PARITY_SAMPLERS_DUPLICATE_PAD_H_
#define RECEIPT_PARITY_SAMPLERS_DUPLICATE_PAD_H_

#include <string>

#include "samplers/distributed_order.h"
#include "samplers/sampler_options.pb.h"

namespace receipt_parity {

class DuplicatePadFactory final
    : public DistributedSamplerFactory<DuplicatePadOptions,
                                       TailHandling::kDuplicatePad> {
 public:
  // Stable: written into manifests and audits.
  std::string name() const override { return "duplicate_pad"; }
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_SAMPLERS_DUPLICATE_PAD_H_
