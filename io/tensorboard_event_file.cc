#include "io/tensorboard_event_file.h"

#include <array>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "io/atomic_file.h"
#include "io/little_endian.h"

namespace receipt_parity {
namespace {

constexpr uint32_t kCastagnoliReflected = 0x82f63b78u;
constexpr uint32_t kMaskDelta = 0xa282ead8u;
constexpr char kFileVersion[] = "brain.Event:2";

std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 1u) != 0 ? (crc >> 1) ^ kCastagnoliReflected : crc >> 1;
    }
    table[byte] = crc;
  }
  return table;
}

std::string Serialized(const tensorboard::Event& event) {
  std::string data;
  event.SerializeToString(&data);
  return data;
}

}  // namespace

uint32_t Crc32c(absl::string_view data) {
  static const std::array<uint32_t, 256> table = MakeCrcTable();
  uint32_t crc = 0xffffffffu;
  for (char c : data) crc = table[(crc ^ static_cast<unsigned char>(c)) & 0xffu] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

uint32_t MaskedCrc32c(absl::string_view data) {
  const uint32_t crc = Crc32c(data);
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}

std::string FrameTfRecord(absl::string_view data) {
  std::string length;
  PutU64(&length, data.size());
  std::string record = length;
  PutU32(&record, MaskedCrc32c(length));
  record.append(data.data(), data.size());
  PutU32(&record, MaskedCrc32c(data));
  return record;
}

std::string EncodeEventFile(const EventFileContents& contents) {
  tensorboard::Event version;
  version.set_wall_time(contents.wall_time);
  version.set_file_version(kFileVersion);
  std::string out = FrameTfRecord(Serialized(version));
  if (contents.restart_step.has_value()) {
    tensorboard::Event restart;
    restart.set_wall_time(contents.wall_time);
    restart.set_step(*contents.restart_step);
    restart.mutable_session_log()->set_status(tensorboard::SessionLog::START);
    out += FrameTfRecord(Serialized(restart));
  }
  for (const ScalarPoint& point : contents.scalars) {
    tensorboard::Event event;
    event.set_wall_time(contents.wall_time);
    event.set_step(point.step);
    tensorboard::Summary::Value* value = event.mutable_summary()->add_value();
    value->set_tag(point.tag);
    value->set_simple_value(static_cast<float>(point.value));
    out += FrameTfRecord(Serialized(event));
  }
  return out;
}

std::string EventFileName(int64_t unix_seconds, int attempt) {
  return absl::StrFormat("events.out.tfevents.%010d.attempt-%05d.receipt_parity", unix_seconds,
                         attempt);
}

absl::Status WriteEventFile(const std::string& dir, const std::string& name,
                            const EventFileContents& contents) {
  std::error_code error;
  if (std::filesystem::is_symlink(dir, error)) {
    return absl::InvalidArgumentError(absl::StrCat(
        dir, " is a link: the event files are written only inside the run folder"));
  }
  if (std::filesystem::exists(dir, error) && !std::filesystem::is_directory(dir, error)) {
    return absl::InvalidArgumentError(absl::StrCat(dir, " is not a folder"));
  }
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", error.message()));
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (IsTempFileName(entry.path().filename().string())) {
      std::filesystem::remove(entry.path(), error);
    }
  }
  return WriteFileAtomically(dir + "/" + name, EncodeEventFile(contents));
}

absl::StatusOr<std::vector<tensorboard::Event>> ReadEventFile(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFileToString(path);
  if (!bytes.ok()) return bytes.status();
  LittleEndianCursor in(*bytes);
  std::vector<tensorboard::Event> events;
  while (!in.done()) {
    const size_t at = in.at();
    const auto corrupt = [&](absl::string_view what) {
      return absl::DataLossError(
          absl::StrCat(path, ": the record at byte ", at, " ", what));
    };
    absl::string_view length_bytes;
    uint32_t length_crc = 0;
    if (!in.Take(8, &length_bytes) || !in.U32(&length_crc)) {
      return corrupt("is truncated in its length");
    }
    if (length_crc != MaskedCrc32c(length_bytes)) {
      return corrupt("has a length that fails its CRC");
    }
    uint64_t length = 0;
    LittleEndianCursor(length_bytes).U64(&length);
    absl::string_view data;
    uint32_t data_crc = 0;
    if (!in.Take(length, &data) || !in.U32(&data_crc)) {
      return corrupt("is truncated in its data");
    }
    if (data_crc != MaskedCrc32c(data)) return corrupt("has data that fails its CRC");
    tensorboard::Event event;
    if (!event.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
      return corrupt("is not an Event");
    }
    events.push_back(std::move(event));
  }
  return events;
}

}  // namespace receipt_parity
