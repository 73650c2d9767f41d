// The epoch permutation of torch.utils.data.DistributedSampler: the only
// place in samplers/ that calls ATen.
//
// Python:  g = torch.Generator(); g.manual_seed(seed + epoch)
//          torch.randperm(n, generator=g).tolist()
// Here:    at::randperm(n, CPU generator seeded seed + epoch) — the same
//          algorithm and generator, so the same permutation, element for
//          element (samplers/distributed_sampler_crosscheck.py checks it
//          against the real Python sampler).
//
// Thread safety: every call uses its own generator; safe to call
// concurrently.
#ifndef RECEIPT_PARITY_SAMPLERS_PERMUTATION_H_
#define RECEIPT_PARITY_SAMPLERS_PERMUTATION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace receipt_parity {

// shuffle: the permutation above (seed + epoch wraps modulo 2^64);
// otherwise 0, 1, ..., num_examples - 1.
// InvalidArgument for num_examples < 0 or epoch < 0; Internal if ATen
// throws.
absl::StatusOr<std::vector<int64_t>> EpochPermutation(int64_t num_examples,
                                                      uint64_t seed,
                                                      int64_t epoch,
                                                      bool shuffle);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_SAMPLERS_PERMUTATION_H_
