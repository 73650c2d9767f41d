// Turning what LibTorch, c10d and Gloo throw into an absl::Status.
//
// LibTorch reports errors by throwing (c10::Error, and std exceptions from
// serialization and c10d). Each function of this project that calls
// LibTorch catches there and returns one of these, so no exception crosses
// a module edge.
#ifndef RECEIPT_PARITY_COLLECTIVES_COLLECTIVE_ERROR_H_
#define RECEIPT_PARITY_COLLECTIVES_COLLECTIVE_ERROR_H_

#include <exception>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace receipt_parity {

// The exception's message; for a c10::Error without LibTorch's C++
// backtrace.
std::string LibTorchErrorMessage(const std::exception& error);

// "<context>: <message>" with `code`: for LibTorch calls that are not
// collectives (tensor ops, the optimizer, generator state, ...).
absl::Status LibTorchErrorToStatus(
    const std::exception& error, absl::string_view context,
    absl::StatusCode code = absl::StatusCode::kInternal);

// "<context>: <message>" (LibTorch backtraces left out) with the code
//   DeadlineExceeded  a timeout ("timed out", "timeout")
//   Unavailable       a lost peer (connection closed/reset/refused, broken
//                     pipe)
//   Internal          anything else.
absl::Status CollectiveErrorToStatus(const std::exception& error,
                                     absl::string_view context);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_COLLECTIVES_COLLECTIVE_ERROR_H_
