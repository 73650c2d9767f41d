// Every artifact of a run folder names the run and the attempt that wrote
// it (../shared/DESIGN.md, "Run folders"): its `config_fingerprint` and
// `attempt` fields.
#ifndef RECEIPT_PARITY_ARTIFACTS_ARTIFACT_STAMP_H_
#define RECEIPT_PARITY_ARTIFACTS_ARTIFACT_STAMP_H_

#include <string>

#include "google/protobuf/message.h"

namespace receipt_parity {

struct ArtifactStamp {
  std::string config_fingerprint;
  int attempt = 1;
};

// Whether `message`'s type has a string `config_fingerprint` and an int32
// `attempt` field (every artifact type must).
bool HasStampFields(const google::protobuf::Descriptor& type);

// Sets both fields of `message`.
// REQUIRES: HasStampFields(*message->GetDescriptor()).
void StampArtifact(const ArtifactStamp& stamp, google::protobuf::Message* message);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_ARTIFACTS_ARTIFACT_STAMP_H_
