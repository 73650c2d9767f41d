#include "artifacts/membership_record.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace receipt_parity {

absl::Status AppendMembershipChanges(const std::string& dir, const ArtifactStamp& stamp,
                                     const std::vector<MembershipChange>& changes) {
  const std::string path = absl::StrCat(dir, "/", kMembershipFile);
  MembershipRecord record;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    if (absl::Status s = ReadArtifact(path, &record); !s.ok()) {
      return absl::DataLossError(absl::StrCat(
          path, " does not read, so the membership changes were not added to it (",
          s.message(), ")"));
    }
  }
  for (const MembershipChange& change : changes) *record.add_changes() = change;
  return WriteArtifact(path, stamp, record);
}

}  // namespace receipt_parity
