// Loads the Python support library (model/python_support.h) into this
// process, once, for runs whose model is a Python module.
#ifndef RECEIPT_PARITY_MODEL_PYTHON_SUPPORT_LOADER_H_
#define RECEIPT_PARITY_MODEL_PYTHON_SUPPORT_LOADER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/python_support.h"

namespace receipt_parity {

inline constexpr char kPythonSupportLibrary[] = "libpython_support.so";

// Where the library is looked for, first found wins:
// $RECEIPT_PARITY_PYTHON_SUPPORT (the library itself); beside this
// executable; this executable's runfiles, model/libpython_support.so.
std::vector<std::string> PythonSupportCandidates();

// The folder of the harness's Python layers (receipt_parity_layers.py,
// which the embedded interpreter imports for KeyedDropout and the layer
// audit): $RECEIPT_PARITY_PYTHON_LAYERS (the file itself), beside this
// executable, or this executable's runfiles, model/; "" when none exists.
std::string PythonLayersFolder();

// dlopens the first candidate that exists and returns what it registered;
// later calls return the same. Errors: NotFound naming every candidate;
// FailedPrecondition with dlerror() when it cannot be loaded or registered
// nothing.
absl::StatusOr<const PythonSupport*> LoadPythonSupport();

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_MODEL_PYTHON_SUPPORT_LOADER_H_
