#include "model/keyed_dropout.h"

#include <ATen/ATen.h>

#include "data/random_stream.h"

namespace receipt_parity {
namespace {

// 53 random bits of `bits` as a double in [0, 1), as RandomStream does.
double UniformOf(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

uint64_t AsBits(int64_t value) { return static_cast<uint64_t>(value); }

}  // namespace

at::Tensor UpdateKeys(const at::Tensor& example_keys, int64_t update) {
  if (!example_keys.defined()) return at::Tensor();
  at::Tensor keys = example_keys.contiguous();
  at::Tensor out = at::empty_like(keys);
  const int64_t* in = keys.data_ptr<int64_t>();
  int64_t* mixed = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < keys.numel(); ++i) {
    mixed[i] = static_cast<int64_t>(MixSeed(AsBits(in[i]), AsBits(update)));
  }
  return out;
}

at::Tensor KeyedDropoutMask(const at::Tensor& update_keys, int64_t elements,
                            double p, uint64_t seed, int layer) {
  at::Tensor keys = update_keys.contiguous();
  const int64_t n = keys.numel();
  at::Tensor mask = at::empty({n, elements}, at::kFloat);
  const int64_t* key = keys.data_ptr<int64_t>();
  float* keep = mask.data_ptr<float>();
  const uint64_t layer_seed = MixSeed(seed, static_cast<uint64_t>(layer));
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t example_seed = MixSeed(layer_seed, AsBits(key[i]));
    for (int64_t e = 0; e < elements; ++e) {
      keep[i * elements + e] =
          UniformOf(MixSeed(example_seed, static_cast<uint64_t>(e))) >= p ? 1.0f : 0.0f;
    }
  }
  return mask;
}

KeyedDropoutImpl::KeyedDropoutImpl(double p, uint64_t seed, int layer)
    : p_(p), seed_(seed), layer_(layer) {}

at::Tensor KeyedDropoutImpl::forward(const at::Tensor& x, const at::Tensor& update_keys) {
  if (!is_training() || p_ == 0 || !update_keys.defined()) return x;
  const int64_t n = x.size(0);
  const int64_t elements = n == 0 ? 0 : x.numel() / n;
  at::Tensor mask = KeyedDropoutMask(update_keys.to(at::kCPU), elements, p_, seed_, layer_)
                        .to(x.device())
                        .view(x.sizes());
  // The mask in x's dtype (bf16 under autocast), scaled as torch's dropout.
  return x * (mask * (1.0 / (1.0 - p_))).to(x.scalar_type());
}

}  // namespace receipt_parity
