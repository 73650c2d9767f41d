// One receipt identity before the split: what the generator and the manifest
// loader produce and what the identity split and the augmentation consume.
#ifndef RECEIPT_PARITY_DATA_RECEIPT_IDENTITY_H_
#define RECEIPT_PARITY_DATA_RECEIPT_IDENTITY_H_

#include <string>
#include <vector>

namespace receipt_parity {

// A grayscale image: image_size * image_size floats, row-major, in [0, 1].
using GrayPixels = std::vector<float>;

struct ReceiptIdentity {
  std::string receipt_id;
  int label = 0;  // an id of data/label_map.h
  // At least one. Synthetic receipts have exactly one; a manifest has one per
  // row of this receipt_id, in manifest order.
  std::vector<GrayPixels> captures;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DATA_RECEIPT_IDENTITY_H_
