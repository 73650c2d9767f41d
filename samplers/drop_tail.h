// The drop_tail sampler policy: DistributedSampler(drop_last=True): the
// permutation is cut to a multiple of the world size; the cut indices are
// GlobalOrder::dropped (named by the audit).
// Options: DropTailOptions (samplers/sampler_options.proto); the exact order is
// in samplers/distributed_order.h.
#ifndef RECEIPT_PARITY_SAMPLERS_DROP_TAIL_H_
#define RECEIPT_PARITY_SAMPLERS_DROP_TAIL_H_

#include <string>

#include "samplers/distributed_order.h"
#include "samplers/sampler_options.pb.h"

namespace receipt_parity {

class DropTailFactory final
    : public DistributedSamplerFactory<DropTailOptions,
                                       TailHandling::kDropTail> {
 public:
  // Stable: written into manifests and audits.
  std::string name() const override { return "drop_tail"; }
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_SAMPLERS_DROP_TAIL_H_
