// Keyed dropout: a dropout whose mask for an example does not depend on
// which rank, micro-batch or position holds it, so an N-worker update
// equals the one-worker update (issue 25).
//
// Element e of example i in layer `layer` is kept iff
//   Uniform(MixSeed(MixSeed(MixSeed(seed, layer), update_key_i), e)) >= p
// (data/random_stream.h: splitmix64, 53 bits), and kept elements are scaled
// by 1 / (1 - p). update_key_i = UpdateKeys(example_key_i, update): the
// example's key (data/receipt_tensors.h: its receipt id and view) mixed with
// the update's index, so each update draws new masks, the same on every
// rank and in the one-worker reference, and a resumed run draws the masks
// the uninterrupted run drew.
//
// Thread safety: the free functions are pure; a module is used by one
// thread, as any torch::nn::Module.
#ifndef RECEIPT_PARITY_MODEL_KEYED_DROPOUT_H_
#define RECEIPT_PARITY_MODEL_KEYED_DROPOUT_H_

#include <cstdint>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

namespace receipt_parity {

// Each example's key for update `update`: int64 [N], MixSeed(key, update)
// element by element; undefined for undefined example_keys (examples
// without keys: keyed layers do not act). REQUIRES: example_keys, when
// defined, is int64 [N] on the CPU.
at::Tensor UpdateKeys(const at::Tensor& example_keys, int64_t update);

// The keep mask, float [N, elements] of 0 and 1, as above.
// REQUIRES: update_keys is int64 [N] on the CPU; 0 <= p < 1.
at::Tensor KeyedDropoutMask(const at::Tensor& update_keys, int64_t elements,
                            double p, uint64_t seed, int layer);

class KeyedDropoutImpl : public torch::nn::Module {
 public:
  // REQUIRES: 0 <= p < 1.
  KeyedDropoutImpl(double p, uint64_t seed, int layer);

  // In training mode with p > 0: x * mask / (1 - p), the mask over x's
  // elements after its first dimension (x: [N, ...]; update_keys: [N]).
  // Otherwise, or with undefined update_keys (a forward pass that is not a
  // training update: validation, a shape check), x unchanged.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& update_keys);

  double p() const { return p_; }
  int layer() const { return layer_; }

 private:
  double p_;
  uint64_t seed_;
  int layer_;
};
TORCH_MODULE(KeyedDropout);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_KEYED_DROPOUT_H_
