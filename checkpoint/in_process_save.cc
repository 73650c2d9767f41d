#include "checkpoint/in_process_save.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"

namespace receipt_parity {
namespace {

// A non-zero rank: hands its info to the gathering vector and returns.
class DeliverToVector : public ShardConfirmations {
 public:
  explicit DeliverToVector(std::vector<ShardInfo>* gathered)
      : gathered_(gathered) {}
  absl::StatusOr<std::vector<ShardInfo>> GatherOnRankZero(
      const ShardInfo& mine) override {
    gathered_->push_back(mine);
    return std::vector<ShardInfo>{};
  }

 private:
  std::vector<ShardInfo>* gathered_;
};

// Rank 0: while it "waits", ranks 1..N-1 save; then it has every info.
class RunOtherRanks : public ShardConfirmations {
 public:
  RunOtherRanks(const std::string& root, int64_t generation, int world_size,
                const SaveOptions& options)
      : root_(root),
        generation_(generation),
        world_size_(world_size),
        options_(options) {}

  absl::StatusOr<std::vector<ShardInfo>> GatherOnRankZero(
      const ShardInfo& mine) override {
    std::vector<ShardInfo> gathered = {mine};
    for (int rank = 1; rank < world_size_; ++rank) {
      DeliverToVector deliver(&gathered);
      absl::Status saved = SaveGeneration(
          root_, generation_, rank, TestShardBytes(generation_, rank),
          TestManifestFields(world_size_, generation_ * 10), deliver, options_);
      if (!saved.ok()) return saved;
    }
    return gathered;
  }

 private:
  std::string root_;
  int64_t generation_;
  int world_size_;
  SaveOptions options_;
};

}  // namespace

std::string TestShardBytes(int64_t generation, int rank, size_t size) {
  std::string bytes(size, '\0');
  uint32_t state = static_cast<uint32_t>(generation * 7919 + rank * 104729 + 1);
  for (char& byte : bytes) {
    state = state * 1664525u + 1013904223u;
    byte = static_cast<char>(state >> 24);
  }
  return bytes;
}

CheckpointManifest TestManifestFields(int world_size, int64_t update) {
  CheckpointManifest fields;
  fields.set_update(update);
  fields.set_epoch(1);
  fields.set_epoch_cursor(update % 7);
  fields.set_world_size(world_size);
  fields.set_config_fingerprint("fingerprint-0123abcd");
  fields.set_model_revision("cnn@deadbeef");
  PluginName* sampler = fields.add_plugins();
  sampler->set_kind("sampler_policy");
  sampler->set_name("duplicate_pad");
  PluginName* reducer = fields.add_plugins();
  reducer->set_kind("reducer");
  reducer->set_name("bucketed_sum");
  return fields;
}

absl::Status SaveAllRanks(const std::string& root, int64_t generation,
                          int world_size, const SaveOptions& options) {
  RunOtherRanks others(root, generation, world_size, options);
  return SaveGeneration(root, generation, 0, TestShardBytes(generation, 0),
                        TestManifestFields(world_size, generation * 10), others,
                        options);
}

std::string FreshTestDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::filesystem::path dir =
      std::filesystem::path(tmp != nullptr ? tmp : "/tmp") / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace receipt_parity
