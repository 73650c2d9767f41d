// What a run asks of its model (model/classifier_builder.h): the shapes,
// the seed, and where the files its options name are. No LibTorch, so the
// config loader can hold one cheaply.
//
// Thread safety: a plain value; resolve_path must be safe to call
// concurrently.
#ifndef RECEIPT_PARITY_MODEL_CLASSIFIER_SPEC_H_
#define RECEIPT_PARITY_MODEL_CLASSIFIER_SPEC_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace receipt_parity {

// What a run asks of its model.
struct ClassifierSpec {
  // One example's shape: [1, S, S] for S x S grayscale receipts.
  std::vector<int64_t> input_shape;
  // Logits per example: one per label (data/label_map.h).
  int num_classes = 0;
  // Seeds torch's generator before parameters are made (a model whose
  // initial parameters come from a file may ignore it).
  uint64_t init_seed = 0;
  // Turns a path written in the plugin's options into the file to open
  // (the trainer: relative to the config's folder, config/config_paths.h).
  // Unset: the path as written.
  std::function<std::string(const std::string&)> resolve_path;

  std::string ResolvePath(const std::string& written) const {
    return resolve_path ? resolve_path(written) : written;
  }
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_CLASSIFIER_SPEC_H_
