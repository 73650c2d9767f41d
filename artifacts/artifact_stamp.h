// Every artifact of a run folder names the run and the attempt that wrote
// it (docs/design.md, "Run folders"): its last two keys are the stamp's,
// "config_fingerprint" and "attempt" (artifacts/artifact_stamp.proto),
// appended by the writers here after the artifact's own fields
// (io/json_file.h). The artifacts' schemas do not repeat them.
//
// Writing and reading are io/json_file.h's: atomic, protobuf's JSON, long
// arrays printed apart; reading is strict (an unknown key is an error), so
// a stamped file is read with ReadArtifact, never plain ReadJsonFile.
#ifndef RECEIPT_PARITY_ARTIFACTS_ARTIFACT_STAMP_H_
#define RECEIPT_PARITY_ARTIFACTS_ARTIFACT_STAMP_H_

#include <string>

#include "absl/status/status.h"
#include "artifacts/artifact_stamp.pb.h"
#include "google/protobuf/message.h"

namespace receipt_parity {

ArtifactStamp MakeArtifactStamp(const std::string& config_fingerprint, int attempt);

// Writes `artifact` with `stamp` appended (io/json_file.h's WriteJsonFile).
absl::Status WriteArtifact(const std::string& path, const ArtifactStamp& stamp,
                           const google::protobuf::Message& artifact);

// The same without copying `artifact` (WriteJsonFileInPlace): it is
// borrowed while this runs and left as it was.
absl::Status WriteArtifactInPlace(const std::string& path, const ArtifactStamp& stamp,
                                  google::protobuf::Message* artifact);

// Reads a stamped artifact into `artifact` and, unless null, its stamp into
// `stamp`. Errors as ReadJsonFile's, naming the path. A file without the
// stamp's keys reads with an empty stamp.
absl::Status ReadArtifact(const std::string& path, google::protobuf::Message* artifact,
                          ArtifactStamp* stamp = nullptr);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_ARTIFACTS_ARTIFACT_STAMP_H_
