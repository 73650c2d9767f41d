#include "artifacts/artifact_stamp.h"

#include "io/json_file.h"

namespace receipt_parity {

ArtifactStamp MakeArtifactStamp(const std::string& config_fingerprint, int attempt) {
  ArtifactStamp stamp;
  stamp.set_config_fingerprint(config_fingerprint);
  stamp.set_attempt(attempt);
  return stamp;
}

absl::Status WriteArtifact(const std::string& path, const ArtifactStamp& stamp,
                           const google::protobuf::Message& artifact) {
  return WriteJsonFile(path, artifact, &stamp);
}

absl::Status WriteArtifactInPlace(const std::string& path, const ArtifactStamp& stamp,
                                  google::protobuf::Message* artifact) {
  return WriteJsonFileInPlace(path, artifact, &stamp);
}

absl::Status ReadArtifact(const std::string& path, google::protobuf::Message* artifact,
                          ArtifactStamp* stamp) {
  ArtifactStamp ignored;
  return ReadJsonFile(path, artifact, stamp != nullptr ? stamp : &ignored);
}

}  // namespace receipt_parity
