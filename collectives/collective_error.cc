#include "collectives/collective_error.h"

#include <c10/util/Exception.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace receipt_parity {

std::string LibTorchErrorMessage(const std::exception& error) {
  const auto* torch_error = dynamic_cast<const c10::Error*>(&error);
  return torch_error != nullptr ? torch_error->what_without_backtrace()
                                : error.what();
}

absl::Status LibTorchErrorToStatus(const std::exception& error,
                                   absl::string_view context,
                                   absl::StatusCode code) {
  return absl::Status(code,
                      absl::StrCat(context, ": ", LibTorchErrorMessage(error)));
}

absl::Status CollectiveErrorToStatus(const std::exception& error,
                                     absl::string_view context) {
  const std::string message = LibTorchErrorMessage(error);
  const std::string lower = absl::AsciiStrToLower(message);
  const std::string text = absl::StrCat(context, ": ", message);
  if (absl::StrContains(lower, "timed out") ||
      absl::StrContains(lower, "timeout")) {
    return absl::DeadlineExceededError(text);
  }
  for (absl::string_view lost :
       {"closed by peer", "connection reset", "connection refused",
        "broken pipe", "connection closed"}) {
    if (absl::StrContains(lower, lost)) return absl::UnavailableError(text);
  }
  return absl::InternalError(text);
}

}  // namespace receipt_parity
