// The tolerance of a run compared with a reference made on another kind of
// device (a GPU run against a CPU reference, or the reverse).
//
// Two devices compute the same fp32 update in different orders (cuDNN and
// cuBLAS against oneDNN and MKL), so their results cannot be bitwise
// equal. Each is an fp32 computation of the same exact value, though: if
// each lies within atol/2 + rtol/2 * |exact| of it, they lie within
// atol + rtol * |reference| of each other (up to the difference between
// |exact| and |reference|, which the margin covers). The constants below
// are twice a bound on the fp32 error of the built-in models' first update
// against the same update in fp64, measured on the CPU
// (parity/cross_device_tolerance_test.cc measures it, and fails if that
// error outgrows half of them): the largest error seen was 3.7e-8
// absolute and at most 15 % of half the allowance at these constants,
// which leaves a margin of about 7x for GPU kernels that round worse than
// the CPU's (fp32
// throughout: TF32 is off, trainer/compute_settings.h). That the GPU's
// error is of the CPU's order is the assumption; what a GPU actually shows
// against a CPU reference is what tools/gpu_check.sh measures
// (gpu_vs_cpu in gpu_check.json).
#ifndef RECEIPT_PARITY_PARITY_CROSS_DEVICE_TOLERANCE_H_
#define RECEIPT_PARITY_PARITY_CROSS_DEVICE_TOLERANCE_H_

namespace receipt_parity {

inline constexpr double kCrossDeviceRtol = 2e-5;
inline constexpr double kCrossDeviceAtol = 2e-7;

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_PARITY_CROSS_DEVICE_TOLERANCE_H_
