// Turning what LibTorch, c10d and Gloo throw into an absl::Status.
#ifndef RECEIPT_PARITY_REDUCERS_COLLECTIVE_ERROR_H_
#define RECEIPT_PARITY_REDUCERS_COLLECTIVE_ERROR_H_

#include <exception>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace receipt_parity {

// "<context>: <message>" (LibTorch backtraces left out) with the code
//   DeadlineExceeded  a timeout ("timed out", "timeout")
//   Unavailable       a lost peer (connection closed/reset/refused, broken
//                     pipe)
//   Internal          anything else.
absl::Status CollectiveErrorToStatus(const std::exception& error,
                                     absl::string_view context);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_REDUCERS_COLLECTIVE_ERROR_H_
