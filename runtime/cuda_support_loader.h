// Loads the CUDA support library (runtime/cuda_support.h) into this
// process, once, for runs that ask for a GPU.
#ifndef RECEIPT_PARITY_RUNTIME_CUDA_SUPPORT_LOADER_H_
#define RECEIPT_PARITY_RUNTIME_CUDA_SUPPORT_LOADER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/cuda_support.h"

namespace receipt_parity {

// The file name of the CUDA support library.
inline constexpr char kCudaSupportLibrary[] = "libcuda_support.so";

// Where the library is looked for, first found wins:
//   $RECEIPT_PARITY_CUDA_SUPPORT (a path to the library itself);
//   beside this executable (a packed binary, tools/gpu_check.sh);
//   this executable's runfiles, runtime/libcuda_support.so (bazel-bin/,
//   `bazel run`, tests, and programs started from those runfiles).
std::vector<std::string> CudaSupportCandidates();

// dlopens the first candidate that exists (RTLD_NOW | RTLD_GLOBAL) and
// returns the support it registered; later calls return the same without
// loading anything. Errors: NotFound naming every candidate when none
// exists; FailedPrecondition with dlerror() when it cannot be loaded (e.g.
// a CUDA library it needs is missing: "libcufile.so.0: cannot open shared
// object file"), or when it registered nothing.
absl::StatusOr<const CudaSupport*> LoadCudaSupport();

// The support loaded so far, or nullptr (nothing is loaded).
const CudaSupport* LoadedCudaSupport();

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_RUNTIME_CUDA_SUPPORT_LOADER_H_
