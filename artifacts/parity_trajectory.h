// A run's trajectory: its parameters and its loss after each checked update
// (parity.check_updates, parity/whole_run_parity.h), kept in its run folder
//   trajectory/update-K.pt    the parameters after global update K
//                             (LibTorch's serialization)
//   trajectory/update-K.json  TrajectoryPointRecord
//                             (artifacts/parity_trajectory.proto): the loss,
//                             the rate, the .pt's size and SHA-1, stamped
// so that a multi-worker run is judged against its reference's, and its
// reference's drift twin's, over the whole run. The .pt is written first and
// the .json last, each atomically: a point whose .json is there is whole.
// A resumed attempt keeps the points its earlier attempts wrote.
//
// Thread safety: functions only; one writer per run folder.
#ifndef RECEIPT_PARITY_ARTIFACTS_PARITY_TRAJECTORY_H_
#define RECEIPT_PARITY_ARTIFACTS_PARITY_TRAJECTORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "artifacts/artifact_stamp.h"
#include "checkpoint/shard_state.h"
#include "google/protobuf/message.h"
#include "parity/whole_run_parity.h"

namespace receipt_parity {

inline constexpr char kTrajectoryFolder[] = "trajectory";

struct TrajectoryPoint {
  CheckedPoint checked;  // update, loss, parameters (detached CPU copies)
  double learning_rate = 0;
  int64_t accepted_examples = 0;
};

// Writes `point` into run_dir/trajectory/ (made when missing). Errors:
// Internal naming the file (LibTorch's, or the write's).
absl::Status WriteTrajectoryPoint(const std::string& run_dir, const TrajectoryPoint& point,
                                  const ArtifactStamp& stamp);

// The point of `update` in run_dir/trajectory/, read as untrusted input
// (io/untrusted_file.h: a regular file inside the folder, of the size and
// SHA-1 its record gives). Errors name the file: NotFound when it was never
// recorded; DataLoss for a damaged or mismatched one; FailedPrecondition
// for one stamped with a config fingerprint that is not one of
// `fingerprints` (when not empty: a run whose attempts ran on different
// numbers of workers has one per world size).
absl::StatusOr<TrajectoryPoint> ReadTrajectoryPoint(
    const std::string& run_dir, int64_t update,
    const std::vector<std::string>& fingerprints = {});

// The updates whose record run_dir/trajectory/ holds, sorted (empty when
// there is no such folder).
std::vector<int64_t> RecordedTrajectoryUpdates(const std::string& run_dir);

// For the trajectory's other records (artifacts/replay_inputs.h), the same
// rules as a point's:
// K of every run_dir/trajectory/`prefix`K.json, sorted.
std::vector<int64_t> RecordedTrajectoryFiles(const std::string& run_dir,
                                             const std::string& prefix);
// `tensors` by name in LibTorch's serialization (checkpoint/shard_state.h),
// detached CPU copies. Internal on a LibTorch error.
absl::StatusOr<std::string> SerializedTensors(const NamedTensors& tensors);
// Writes run_dir/trajectory/`tensors_file` (made when missing) and then
// the stamped `record` as run_dir/trajectory/`record_name`, each atomically.
absl::Status WriteTrajectoryFiles(const std::string& run_dir, const std::string& tensors_file,
                                  const std::string& tensor_bytes, const std::string& record_name,
                                  const ArtifactStamp& stamp,
                                  const google::protobuf::Message& record);
// Reads run_dir/trajectory/`name` as untrusted input into `record`, its
// stamp one of `fingerprints` (any when empty). Errors as
// ReadTrajectoryPoint's.
absl::Status ReadTrajectoryRecord(const std::string& run_dir, const std::string& name,
                                  const std::vector<std::string>& fingerprints,
                                  google::protobuf::Message* record);
// The tensors of run_dir/trajectory/`file`, of the size and SHA-1 that the
// record `record_name` gives. Errors name the file (DataLoss when damaged).
absl::StatusOr<ShardState> ReadTrajectoryTensors(const std::string& run_dir,
                                                 const std::string& record_name,
                                                 const std::string& file, int64_t bytes,
                                                 const std::string& sha1);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_ARTIFACTS_PARITY_TRAJECTORY_H_
