// membership.json: the launcher's record of every rank a multi-worker run
// lost (and, later, gained), over all of the run's attempts
// (artifacts/membership.proto). A run folder's entry, not an attempt's
// artifact: a resumed attempt keeps it, --overwrite removes it.
#ifndef RECEIPT_PARITY_ARTIFACTS_MEMBERSHIP_RECORD_H_
#define RECEIPT_PARITY_ARTIFACTS_MEMBERSHIP_RECORD_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "artifacts/artifact_stamp.h"
#include "artifacts/membership.pb.h"

namespace receipt_parity {

inline constexpr char kMembershipFile[] = "membership.json";

// Appends `changes` to DIR/membership.json (written atomically, stamped
// with `stamp`; made when absent). A file there that does not read (not
// JSON, unknown keys) is not overwritten: DataLoss naming it, and nothing
// written.
absl::Status AppendMembershipChanges(const std::string& dir, const ArtifactStamp& stamp,
                                     const std::vector<MembershipChange>& changes);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_ARTIFACTS_MEMBERSHIP_RECORD_H_
