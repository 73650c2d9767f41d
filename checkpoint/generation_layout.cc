#include "checkpoint/generation_layout.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "io/untrusted_file.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "logging/glog.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

constexpr absl::string_view kGenerationPrefix = "gen-";

}  // namespace

std::string GenerationFolderName(int64_t generation) {
  CHECK(generation >= 1 && generation <= 999999)
      << "generation out of range: " << generation;
  return absl::StrFormat("gen-%06d", generation);
}

std::optional<int64_t> ParseGenerationFolderName(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, kGenerationPrefix) || name.size() != 6) {
    return std::nullopt;
  }
  if (!std::all_of(name.begin(), name.end(), absl::ascii_isdigit)) {
    return std::nullopt;
  }
  int64_t generation = 0;
  if (!absl::SimpleAtoi(name, &generation) || generation < 1) {
    return std::nullopt;
  }
  return generation;
}

std::string ShardFileName(int rank) {
  CHECK(rank >= 0 && rank <= 99999) << "rank out of range: " << rank;
  return absl::StrFormat("shard-rank-%05d.pt", rank);
}

std::string GenerationPath(const std::string& root, int64_t generation) {
  return (fs::path(root) / GenerationFolderName(generation)).string();
}

absl::StatusOr<std::vector<GenerationFolder>> ListGenerationFolders(
    const std::string& root) {
  std::vector<GenerationFolder> folders;
  std::error_code ec;
  if (!fs::exists(root, ec)) return folders;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::optional<int64_t> generation =
        ParseGenerationFolderName(it->path().filename().string());
    if (!generation.has_value() || !it->is_directory(ec)) continue;
    GenerationFolder folder;
    folder.generation = *generation;
    folder.path = it->path().string();
    folder.has_manifest = fs::exists(it->path() / kManifestFileName, ec) && !ec;
    folder.leaves_root = !ResolvesInside(folder.path, root);
    folders.push_back(folder);
  }
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot list checkpoint root ", root, ": ", ec.message()));
  }
  std::sort(folders.begin(), folders.end(),
            [](const GenerationFolder& a, const GenerationFolder& b) {
              return a.generation < b.generation;
            });
  return folders;
}

absl::StatusOr<int64_t> NextGeneration(const std::string& root) {
  absl::StatusOr<std::vector<GenerationFolder>> folders =
      ListGenerationFolders(root);
  if (!folders.ok()) return folders.status();
  return folders->empty() ? 1 : folders->back().generation + 1;
}

}  // namespace receipt_parity
