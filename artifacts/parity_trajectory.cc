#include "artifacts/parity_trajectory.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <map>
#include <system_error>
#include <utility>

#include <c10/util/hash.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "artifacts/parity_trajectory.pb.h"
#include "checkpoint/shard_state.h"
#include "collectives/collective_error.h"
#include "io/atomic_file.h"
#include "io/json_file.h"
#include "io/untrusted_file.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

// A record is small; anything larger is not one.
constexpr int64_t kMostRecordBytes = int64_t{16} << 20;

std::string Folder(const std::string& run_dir) {
  return absl::StrCat(run_dir, "/", kTrajectoryFolder);
}

std::string PointName(int64_t update, const char* extension) {
  return absl::StrCat("update-", update, extension);
}

}  // namespace

absl::StatusOr<std::string> SerializedTensors(const NamedTensors& tensors) {
  ShardState state;
  try {
    for (const auto& [name, tensor] : tensors) {
      state.owned_tensors[name] = tensor.detach().to(at::kCPU).contiguous();
    }
  } catch (const std::exception& e) {
    return LibTorchErrorToStatus(e, "trajectory: copying the tensors: LibTorch");
  }
  return SerializeShardState(state);
}

absl::Status ReadTrajectoryRecord(const std::string& run_dir, const std::string& name,
                                  const std::vector<std::string>& fingerprints,
                                  google::protobuf::Message* record) {
  const std::string record_path = Folder(run_dir) + "/" + name;
  UntrustedFileRules record_rules;
  record_rules.within = run_dir;
  record_rules.max_bytes = kMostRecordBytes;
  absl::StatusOr<std::string> record_text = ReadUntrustedFile(record_path, record_rules);
  if (!record_text.ok()) return record_text.status();
  ArtifactStamp stamp;
  if (absl::Status s = ParseJsonFileText(record_path, *record_text, record, &stamp); !s.ok()) {
    return absl::DataLossError(s.message());
  }
  if (!fingerprints.empty() && std::find(fingerprints.begin(), fingerprints.end(),
                                          stamp.config_fingerprint()) == fingerprints.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        record_path, " was recorded by a run of config ", stamp.config_fingerprint(),
        ", not of ", absl::StrJoin(fingerprints, " or ")));
  }
  return absl::OkStatus();
}

absl::StatusOr<ShardState> ReadTrajectoryTensors(const std::string& run_dir,
                                                 const std::string& record_name,
                                                 const std::string& file, int64_t bytes,
                                                 const std::string& sha1) {
  const std::string folder = Folder(run_dir);
  const std::string record_path = folder + "/" + record_name;
  UntrustedFileRules tensor_rules;
  tensor_rules.within = run_dir;
  tensor_rules.exact_bytes = bytes;
  tensor_rules.exact_bytes_source = absl::StrCat(record_path, "'s size of ", file);
  const std::string tensor_path = folder + "/" + file;
  absl::StatusOr<std::string> read = ReadUntrustedFile(tensor_path, tensor_rules);
  if (!read.ok()) return read.status();
  if (c10::sha1(*read).str() != sha1) {
    return absl::DataLossError(absl::StrCat(tensor_path, ": SHA-1 is not the one ",
                                            record_path, " records"));
  }
  return DeserializeShardState(*read, tensor_path);
}

absl::Status WriteTrajectoryFiles(const std::string& run_dir, const std::string& tensors_file,
                                  const std::string& tensor_bytes, const std::string& record_name,
                                  const ArtifactStamp& stamp,
                                  const google::protobuf::Message& record) {
  const std::string folder = Folder(run_dir);
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot make ", folder, ": ", ec.message()));
  }
  if (absl::Status s = WriteFileAtomically(folder + "/" + tensors_file, tensor_bytes); !s.ok()) {
    return s;
  }
  return WriteArtifact(folder + "/" + record_name, stamp, record);
}

absl::Status WriteTrajectoryPoint(const std::string& run_dir, const TrajectoryPoint& point,
                                  const ArtifactStamp& stamp) {
  absl::StatusOr<std::string> bytes = SerializedTensors(point.checked.parameters);
  if (!bytes.ok()) return bytes.status();
  TrajectoryPointRecord record;
  record.set_update(static_cast<int32_t>(point.checked.update));
  record.set_loss(point.checked.loss);
  record.set_learning_rate(point.learning_rate);
  record.set_accepted_examples(static_cast<int32_t>(point.accepted_examples));
  record.set_parameters_file(PointName(point.checked.update, ".pt"));
  record.set_parameters_bytes(static_cast<int64_t>(bytes->size()));
  record.set_parameters_sha1(c10::sha1(*bytes).str());
  for (const auto& named : point.checked.parameters) record.add_parameter_order(named.first);
  for (double norm : point.checked.change_norms) record.add_change_norms(norm);
  return WriteTrajectoryFiles(run_dir, record.parameters_file(), *bytes,
                              PointName(point.checked.update, ".json"), stamp, record);
}

absl::StatusOr<TrajectoryPoint> ReadTrajectoryPoint(
    const std::string& run_dir, int64_t update, const std::vector<std::string>& fingerprints) {
  const std::string record_name = PointName(update, ".json");
  const std::string record_path = Folder(run_dir) + "/" + record_name;
  TrajectoryPointRecord record;
  if (absl::Status s = ReadTrajectoryRecord(run_dir, record_name, fingerprints, &record);
      !s.ok()) {
    return s;
  }
  if (record.update() != update || record.parameters_file() != PointName(update, ".pt")) {
    return absl::DataLossError(absl::StrCat(record_path, " records update ", record.update(),
                                            " in ", record.parameters_file()));
  }
  absl::StatusOr<ShardState> state =
      ReadTrajectoryTensors(run_dir, record_name, record.parameters_file(),
                            record.parameters_bytes(), record.parameters_sha1());
  if (!state.ok()) return state.status();
  const std::string tensor_path = Folder(run_dir) + "/" + record.parameters_file();
  TrajectoryPoint point;
  point.checked.update = update;
  point.checked.loss = record.loss();
  point.learning_rate = record.learning_rate();
  point.accepted_examples = record.accepted_examples();
  for (const std::string& name : record.parameter_order()) {
    auto it = state->owned_tensors.find(name);
    if (it == state->owned_tensors.end()) {
      return absl::DataLossError(absl::StrCat(tensor_path, " holds no parameter ", name));
    }
    point.checked.parameters.emplace_back(name, it->second);
  }
  if (point.checked.parameters.size() != state->owned_tensors.size()) {
    return absl::DataLossError(
        absl::StrCat(tensor_path, " holds parameters its record does not name"));
  }
  if (record.change_norms_size() != 0 &&
      record.change_norms_size() != record.parameter_order_size()) {
    return absl::DataLossError(absl::StrCat(record_path, " records ", record.change_norms_size(),
                                            " change norms for ", record.parameter_order_size(),
                                            " parameters"));
  }
  for (double norm : record.change_norms()) {
    if (!std::isfinite(norm) || norm < 0) {
      return absl::DataLossError(
          absl::StrCat(record_path, " records a change norm of ", norm));
    }
    point.checked.change_norms.push_back(norm);
  }
  return point;
}

std::vector<int64_t> RecordedTrajectoryFiles(const std::string& run_dir,
                                             const std::string& prefix) {
  std::vector<int64_t> updates;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(Folder(run_dir), ec)) {
    absl::string_view name = e.path().filename().native();
    int64_t k = 0;
    if (absl::ConsumePrefix(&name, prefix) && absl::ConsumeSuffix(&name, ".json") &&
        absl::SimpleAtoi(name, &k)) {
      updates.push_back(k);
    }
  }
  std::sort(updates.begin(), updates.end());
  return updates;
}

std::vector<int64_t> RecordedTrajectoryUpdates(const std::string& run_dir) {
  return RecordedTrajectoryFiles(run_dir, "update-");
}

}  // namespace receipt_parity
