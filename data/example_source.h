// Where a run's examples come from when an update or the validation needs
// them: the slots' rows, selected by dataset index.
//
// Implemented by InMemoryExamples (every example's pixels in one tensor,
// data/receipt_tensors.h) and by SyntheticExampleSource
// (data/synthetic_example_source.h), which renders a slot's pixels when it
// is selected, from a compact index; the trainer chooses between them
// (trainer/run_examples.h).
//
// Thread safety: Select() may be called from one thread at a time.
#ifndef RECEIPT_PARITY_DATA_EXAMPLE_SOURCE_H_
#define RECEIPT_PARITY_DATA_EXAMPLE_SOURCE_H_

#include <cstdint>
#include <vector>

#include <c10/core/Device.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "data/receipt_tensors.h"
#include "data/slot.h"

namespace receipt_parity {

class ExampleSource {
 public:
  virtual ~ExampleSource() = default;

  // The examples: dataset indices 0 .. size() - 1.
  virtual int64_t size() const = 0;

  // The rows of `slots` (masked slots included: they are computed and
  // weigh zero), in slot order: images and labels on the source's device,
  // keys on the CPU. Errors: Internal naming a slot whose dataset index is
  // not an example (a plan of another dataset), or when LibTorch fails.
  virtual absl::StatusOr<ExampleTensors> Select(absl::Span<const Slot> slots) const = 0;

  // The keys alone of the rows of `slots`, in slot order, as Select()
  // gives them (an empty vector from a source without keys), without making
  // any pixels: what the every-update accounting (verify/) expects a
  // rank's forward passes to have drawn from. Errors as Select()'s. The
  // default selects the rows and keeps their keys.
  virtual absl::StatusOr<std::vector<int64_t>> SelectKeys(absl::Span<const Slot> slots) const;

  // Where Select() puts the images and labels from now on (keys stay on
  // the CPU). Errors: Internal (LibTorch), naming the device.
  virtual absl::Status MoveTo(const c10::Device& device) = 0;
};

// `keys` ([N] int64, or undefined: N zeros) as a vector.
std::vector<int64_t> KeysOf(const at::Tensor& keys, int64_t n);

// Internal naming the first slot whose dataset index is not in
// [0, size): what a source's Select() refuses before it selects.
absl::Status CheckSlotsIn(absl::Span<const Slot> slots, int64_t size);

// Every example in memory: `all` (images [N, 1, S, S], labels [N], keys
// [N] or undefined). Shares `all`'s storage: what changes it changes the
// source.
class InMemoryExamples : public ExampleSource {
 public:
  InMemoryExamples() = default;
  explicit InMemoryExamples(ExampleTensors all) : all_(std::move(all)) {}

  int64_t size() const override { return all_.labels.defined() ? all_.labels.size(0) : 0; }
  absl::StatusOr<ExampleTensors> Select(absl::Span<const Slot> slots) const override;
  absl::StatusOr<std::vector<int64_t>> SelectKeys(absl::Span<const Slot> slots) const override;

  // Moves the images and labels held to `device`.
  absl::Status MoveTo(const c10::Device& device) override;

  const ExampleTensors& tensors() const { return all_; }

 private:
  ExampleTensors all_;
};

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DATA_EXAMPLE_SOURCE_H_
