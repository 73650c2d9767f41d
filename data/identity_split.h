// The train/validation split by receipt identity, made BEFORE augmentation,
// so no receipt id can reach both sides.
//
// Stratified by class: within each label, identities are ordered by a hash of
// (split_seed, receipt_id) and the first n_val go to validation, where
// n_val = round(validation_fraction * n), raised to 1 when the fraction is
// positive and the class has at least 2 identities (so the rare class appears
// in validation whenever possible) and lowered to n - 1 (so every class keeps
// a training identity). An identity's side therefore depends on its id, its
// class, the seed and its rank inside its class, never on input order.
// Thread safety: a pure function.
#ifndef RECEIPT_PARITY_DATA_IDENTITY_SPLIT_H_
#define RECEIPT_PARITY_DATA_IDENTITY_SPLIT_H_

#include <cstdint>
#include <vector>

#include "data/receipt_identity.h"

namespace receipt_parity {

struct IdentitySplit {
  // Indices into the identities given to SplitIdentities, ascending. Every
  // index is in exactly one of the two.
  std::vector<int> train;
  std::vector<int> validation;
};

// REQUIRES: validation_fraction in [0, 1); labels in [0, kNumLabels).
IdentitySplit SplitIdentities(const std::vector<ReceiptIdentity>& identities,
                              double validation_fraction, uint64_t split_seed);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DATA_IDENTITY_SPLIT_H_
