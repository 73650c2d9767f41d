// A support library: a shared library that a host binary loads only for
// the runs that need it (libcuda_support.so for GPU runs,
// libpython_support.so for Python modules), because what it links costs
// every other run (libtorch_cuda: about 235 MB resident). The library
// registers one object, from a static initialiser, through a function the
// host defines and exports (-rdynamic); the host's loader keeps it.
#ifndef RECEIPT_PARITY_PLUGINS_SUPPORT_LIBRARY_H_
#define RECEIPT_PARITY_PLUGINS_SUPPORT_LIBRARY_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace receipt_parity {

// Where a support library is looked for, first found wins:
//   $`environment_variable` (a path to the library itself), when set;
//   beside this executable (a packed binary, tools/gpu_check.sh);
//   this executable's runfiles, at `runfiles_path` (for example
//   "receipt_parity/runtime/libcuda_support.so": bazel-bin/, `bazel run`,
//   tests, and programs started from those runfiles).
std::vector<std::string> SupportLibraryCandidates(absl::string_view environment_variable,
                                                  absl::string_view runfiles_path);

// dlopens the first candidate that exists (RTLD_NOW | RTLD_GLOBAL: what
// it links, libpython for one, must be visible to what it loads in turn)
// and checks with `registered` that its initialiser registered its object.
// Errors, naming `what` ("the CUDA support library"): NotFound naming
// every candidate when none exists; FailedPrecondition with dlerror()
// when it cannot be loaded (a library it needs is missing), or when it
// registered nothing.
absl::Status LoadSupportLibrary(absl::string_view what,
                                const std::vector<std::string>& candidates,
                                const std::function<bool()>& registered);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_PLUGINS_SUPPORT_LIBRARY_H_
