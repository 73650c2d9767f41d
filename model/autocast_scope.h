// Mixed precision for a forward pass: LibTorch's autocast (the C++ side of
// torch.autocast) on for one device type while a scope lives. Inside it,
// the ops autocast lists (matmuls, convolutions) run in bfloat16 on copies
// of the fp32 weights; the weights themselves, their gradients and every
// op autocast keeps in fp32 (the losses, softmax) stay fp32. Backward runs
// after the scope, outside autocast, as PyTorch recommends.
//
// A scope built disabled does nothing, so callers write one code path for
// fp32 and bf16. Restores the previous state (enabled flag and dtype) and
// clears autocast's cast cache on exit.
//
// Thread safety: autocast's state is thread-local; a scope affects its own
// thread only. Not copyable.
#ifndef RECEIPT_PARITY_MODEL_AUTOCAST_SCOPE_H_
#define RECEIPT_PARITY_MODEL_AUTOCAST_SCOPE_H_

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

namespace receipt_parity {

class AutocastScope {
 public:
  // bfloat16 autocast for `device_type` (CPU or CUDA) when `enabled`.
  AutocastScope(c10::DeviceType device_type, bool enabled);
  ~AutocastScope();

  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_type_;
  bool enabled_;
  bool was_enabled_ = false;
  c10::ScalarType previous_dtype_ = c10::ScalarType::Undefined;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_AUTOCAST_SCOPE_H_
