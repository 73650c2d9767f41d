#include "artifacts/replay_inputs.h"

#include <algorithm>
#include <utility>

#include <c10/util/hash.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "artifacts/parity_trajectory.h"
#include "artifacts/parity_trajectory.pb.h"

namespace receipt_parity {
namespace {

constexpr char kOptimizerPrefix[] = "optimizer/";
constexpr char kGradientPrefix[] = "gradient/";

std::string Name(int64_t update, const char* extension) {
  return absl::StrCat("replay-", update, extension);
}

template <typename Record>
void AddSlots(const std::vector<Slot>& slots, const std::vector<double>& weights,
              Record* record) {
  for (size_t i = 0; i < slots.size(); ++i) {
    record->add_dataset_index(static_cast<int32_t>(slots[i].dataset_index));
    record->add_valid(slots[i].valid);
    record->add_weight(weights[i]);
  }
}

ReplayInputsRecord RecordOf(const ReplayInputs& inputs) {
  const RecordedUpdate& u = inputs.update;
  ReplayInputsRecord record;
  record.set_update(static_cast<int32_t>(u.total_update));
  record.set_world_size(inputs.world_size);
  record.set_precision(u.bf16 ? "bf16" : "fp32");
  record.set_device(u.device);
  for (const std::vector<MicroBatchShare>& share : u.shares) {
    RankShareRecord* rank = record.add_ranks();
    record.set_micro_batches(static_cast<int32_t>(share.size()));
    for (const MicroBatchShare& part : share) {
      MicroBatchRecord* m = rank->add_micro_batches();
      m->set_begin(static_cast<int32_t>(part.begin));
      AddSlots(part.slots, part.weights, m);
    }
  }
  for (const ChunkShare& chunk : u.chunks) {
    ChunkShareRecord* c = record.add_chunks();
    c->set_row(static_cast<int32_t>(chunk.row));
    c->set_rank(chunk.rank);
    for (int64_t p : chunk.positions) c->add_position(static_cast<int32_t>(p));
    AddSlots(chunk.slots, chunk.weights, c);
  }
  record.set_chunk_rows(static_cast<int32_t>(u.chunk_rows));
  record.set_reduced_divisor(u.reduced_divisor);
  if (u.clipping.has_value()) {
    record.set_clip_max_norm(u.clipping->max_norm);
    record.set_clip_scope(u.clipping->global ? "global" : "local");
  }
  record.set_run_clip_factor(u.run_clip_factor);
  record.set_rate_factor(u.rate_factor);
  record.set_learning_rate(inputs.learning_rate);
  for (const std::string& name : inputs.parameter_order) record.add_parameter_order(name);
  return record;
}

NamedTensors StateTensors(const RunStateAtUpdate& state) {
  NamedTensors tensors;
  for (const auto& [name, tensor] : state.model_before) tensors.emplace_back(name, tensor);
  for (const auto& [name, tensor] : state.optimizer_before) {
    tensors.emplace_back(absl::StrCat(kOptimizerPrefix, name), tensor);
  }
  for (const auto& [name, tensor] : state.gradient) {
    tensors.emplace_back(absl::StrCat(kGradientPrefix, name), tensor);
  }
  return tensors;
}

// The slots of a record's entry, each dataset index checked.
template <typename Record>
absl::StatusOr<std::pair<std::vector<Slot>, std::vector<double>>> SlotsOf(
    const Record& record, int64_t num_examples, const std::string& path) {
  if (record.valid_size() != record.dataset_index_size() ||
      record.weight_size() != record.dataset_index_size()) {
    return absl::DataLossError(
        absl::StrCat(path, ": a share's dataset_index, valid and weight differ in length"));
  }
  std::vector<Slot> slots;
  for (int i = 0; i < record.dataset_index_size(); ++i) {
    const int64_t index = record.dataset_index(i);
    if (index < 0 || index >= num_examples) {
      return absl::DataLossError(absl::StrCat(path, ": dataset_index ", index,
                                              " is outside the training set's ", num_examples,
                                              " examples"));
    }
    slots.push_back(Slot{index, record.valid(i)});
  }
  return std::make_pair(std::move(slots), std::vector<double>(record.weight().begin(),
                                                              record.weight().end()));
}

absl::Status UpdateOf(const ReplayInputsRecord& record, int64_t num_examples,
                      const std::string& path, ReplayInputs* inputs) {
  RecordedUpdate& u = inputs->update;
  u.total_update = record.update();
  u.bf16 = record.precision() == "bf16";
  u.device = record.device();
  for (const RankShareRecord& rank : record.ranks()) {
    std::vector<MicroBatchShare> share;
    for (const MicroBatchRecord& m : rank.micro_batches()) {
      absl::StatusOr<std::pair<std::vector<Slot>, std::vector<double>>> slots =
          SlotsOf(m, num_examples, path);
      if (!slots.ok()) return slots.status();
      share.push_back(MicroBatchShare{m.begin(), std::move(slots->first),
                                      std::move(slots->second)});
    }
    if (share.empty()) return absl::DataLossError(absl::StrCat(path, ": a rank without a share"));
    u.shares.push_back(std::move(share));
  }
  for (const ChunkShareRecord& c : record.chunks()) {
    absl::StatusOr<std::pair<std::vector<Slot>, std::vector<double>>> slots =
        SlotsOf(c, num_examples, path);
    if (!slots.ok()) return slots.status();
    if (c.position_size() != c.dataset_index_size() || c.row() < 0 ||
        c.row() >= record.chunk_rows() || c.rank() < 0) {
      return absl::DataLossError(absl::StrCat(path, ": chunk ", c.row(), " is inconsistent"));
    }
    ChunkShare chunk;
    chunk.row = c.row();
    chunk.rank = c.rank();
    chunk.positions.assign(c.position().begin(), c.position().end());
    chunk.slots = std::move(slots->first);
    chunk.weights = std::move(slots->second);
    u.chunks.push_back(std::move(chunk));
  }
  u.chunk_rows = record.chunk_rows();
  u.reduced_divisor = std::max(1, record.reduced_divisor());
  if (!record.clip_scope().empty()) {
    u.clipping = GradientClipping{record.clip_max_norm(), record.clip_scope() == "global"};
  }
  u.run_clip_factor = record.run_clip_factor();
  u.rate_factor = record.rate_factor();
  inputs->world_size = record.world_size();
  inputs->learning_rate = record.learning_rate();
  inputs->parameter_order.assign(record.parameter_order().begin(),
                                 record.parameter_order().end());
  return absl::OkStatus();
}

// The state's tensors out of the file's, by prefix.
absl::Status StateOf(ShardState file, const std::string& path, ReplayInputs* inputs) {
  RunStateAtUpdate& state = inputs->state;
  for (auto& [name, tensor] : file.owned_tensors) {
    absl::string_view rest = name;
    if (absl::ConsumePrefix(&rest, kOptimizerPrefix)) {
      state.optimizer_before[std::string(rest)] = tensor;
    } else if (!absl::StartsWith(name, kGradientPrefix)) {
      state.model_before[name] = tensor;
    }
  }
  for (const std::string& name : inputs->parameter_order) {
    auto it = file.owned_tensors.find(absl::StrCat(kGradientPrefix, name));
    if (it == file.owned_tensors.end()) {
      return absl::DataLossError(absl::StrCat(path, " holds no gradient of ", name));
    }
    state.gradient.emplace_back(name, it->second);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteReplayInputs(const std::string& run_dir, const ReplayInputs& inputs,
                               const ArtifactStamp& stamp) {
  absl::StatusOr<std::string> bytes = SerializedTensors(StateTensors(inputs.state));
  if (!bytes.ok()) return bytes.status();
  ReplayInputsRecord record = RecordOf(inputs);
  record.set_state_file(Name(inputs.update.total_update, ".pt"));
  record.set_state_bytes(static_cast<int64_t>(bytes->size()));
  record.set_state_sha1(c10::sha1(*bytes).str());
  return WriteTrajectoryFiles(run_dir, record.state_file(), *bytes,
                              Name(inputs.update.total_update, ".json"), stamp, record);
}

absl::StatusOr<ReplayInputs> ReadReplayInputs(const std::string& run_dir, int64_t update,
                                              int64_t num_examples,
                                              const std::vector<std::string>& fingerprints) {
  const std::string name = Name(update, ".json");
  const std::string path = absl::StrCat(run_dir, "/", kTrajectoryFolder, "/", name);
  ReplayInputsRecord record;
  if (absl::Status s = ReadTrajectoryRecord(run_dir, name, fingerprints, &record); !s.ok()) {
    return s;
  }
  if (record.update() != update || record.state_file() != Name(update, ".pt")) {
    return absl::DataLossError(absl::StrCat(path, " records update ", record.update(), " in ",
                                            record.state_file()));
  }
  ReplayInputs inputs;
  if (absl::Status s = UpdateOf(record, num_examples, path, &inputs); !s.ok()) return s;
  absl::StatusOr<ShardState> file = ReadTrajectoryTensors(
      run_dir, name, record.state_file(), record.state_bytes(), record.state_sha1());
  if (!file.ok()) return file.status();
  if (absl::Status s = StateOf(*std::move(file), path, &inputs); !s.ok()) return s;
  return inputs;
}

std::vector<int64_t> RecordedReplayUpdates(const std::string& run_dir) {
  return RecordedTrajectoryFiles(run_dir, "replay-");
}

}  // namespace receipt_parity
