#include "runtime/membership.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace receipt_parity {

std::string MembershipKey(int membership) { return absl::StrCat("membership/", membership); }

std::string ReformedKey(int membership, int launch_rank) {
  return absl::StrCat("membership/", membership, "/reformed/", launch_rank);
}

std::string JoiningKey(int joins_after, int launch_rank) {
  return absl::StrCat("membership/", joins_after, "/joining/", launch_rank);
}

std::string FormatMembership(const std::vector<int>& launch_ranks) {
  return absl::StrJoin(launch_ranks, ",");
}

absl::StatusOr<std::vector<int>> ParseMembership(const std::string& text) {
  std::vector<int> ranks;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int rank = -1;
    if (!absl::SimpleAtoi(part, &rank) || rank < 0 ||
        std::find(ranks.begin(), ranks.end(), rank) != ranks.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("membership '", text, "' is not distinct launch ranks"));
    }
    ranks.push_back(rank);
  }
  return ranks;
}

absl::Status PublishMembership(c10d::Store& store, int membership,
                               const std::vector<int>& launch_ranks) {
  const std::string text = FormatMembership(launch_ranks);
  try {
    store.set(MembershipKey(membership), std::vector<uint8_t>(text.begin(), text.end()));
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot publish membership ", membership, ": ", e.what()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::vector<int>>> AwaitMembership(
    c10d::Store& store, int membership, std::chrono::milliseconds timeout) {
  std::vector<uint8_t> bytes;
  try {
    store.wait({MembershipKey(membership)}, timeout);
    bytes = store.get(MembershipKey(membership));
  } catch (const std::exception&) {
    return std::optional<std::vector<int>>();  // none in time
  }
  absl::StatusOr<std::vector<int>> ranks = ParseMembership(std::string(bytes.begin(), bytes.end()));
  if (!ranks.ok()) return absl::DataLossError(ranks.status().message());
  return std::optional<std::vector<int>>(*std::move(ranks));
}

std::string FormatReformed(const ReformedReport& report) {
  return absl::StrCat(report.reforming_seconds, " ", report.updates_redone, " ",
                      report.went_on_from_update);
}

std::optional<ReformedReport> ParseReformed(const std::string& text) {
  const std::vector<std::string> parts = absl::StrSplit(text, ' ');
  ReformedReport report;
  if (parts.size() != 3 || !absl::SimpleAtod(parts[0], &report.reforming_seconds) ||
      !absl::SimpleAtoi(parts[1], &report.updates_redone) ||
      !absl::SimpleAtoi(parts[2], &report.went_on_from_update)) {
    return std::nullopt;
  }
  return report;
}

}  // namespace receipt_parity
