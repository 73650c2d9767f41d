#include "data/identity_split.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "data/label_map.h"
#include "data/random_stream.h"
#include "logging/glog.h"

namespace receipt_parity {

IdentitySplit SplitIdentities(const std::vector<ReceiptIdentity>& identities,
                              double validation_fraction, uint64_t split_seed) {
  CHECK(validation_fraction >= 0.0 && validation_fraction < 1.0)
      << validation_fraction;
  std::vector<std::vector<int>> by_label(kNumLabels);
  for (int i = 0; i < static_cast<int>(identities.size()); ++i) {
    const int label = identities[i].label;
    CHECK(label >= 0 && label < kNumLabels) << label;
    by_label[label].push_back(i);
  }

  std::vector<uint64_t> key(identities.size());
  for (size_t i = 0; i < identities.size(); ++i) {
    key[i] = MixSeed(split_seed, HashString(identities[i].receipt_id));
  }

  IdentitySplit split;
  for (std::vector<int>& members : by_label) {
    const int n = static_cast<int>(members.size());
    if (n == 0) continue;
    std::sort(members.begin(), members.end(), [&](int a, int b) {
      return std::tie(key[a], identities[a].receipt_id) <
             std::tie(key[b], identities[b].receipt_id);
    });
    int n_val = static_cast<int>(std::floor(validation_fraction * n + 0.5));
    if (validation_fraction > 0.0 && n >= 2) n_val = std::max(n_val, 1);
    n_val = std::min(n_val, n - 1);
    split.validation.insert(split.validation.end(), members.begin(),
                            members.begin() + n_val);
    split.train.insert(split.train.end(), members.begin() + n_val,
                       members.end());
  }
  std::sort(split.train.begin(), split.train.end());
  std::sort(split.validation.begin(), split.validation.end());
  return split;
}

}  // namespace receipt_parity
