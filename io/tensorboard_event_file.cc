#include "io/tensorboard_event_file.h"

#include <array>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "io/atomic_file.h"

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

void PutLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int b = 0; b < bytes; ++b) out->push_back(static_cast<char>((value >> (8 * b)) & 0xffu));
}

uint64_t GetLittleEndian(absl::string_view bytes) {
  uint64_t value = 0;
  for (size_t b = 0; b < bytes.size(); ++b) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[b])) << (8 * b);
  }
  return value;
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
  PutLittleEndian(data.size(), 8, &length);
  std::string record = length;
  PutLittleEndian(MaskedCrc32c(length), 4, &record);
  record.append(data.data(), data.size());
  PutLittleEndian(MaskedCrc32c(data), 4, &record);
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
  const absl::string_view file = *bytes;
  std::vector<tensorboard::Event> events;
  size_t at = 0;
  while (at < file.size()) {
    const auto corrupt = [&](absl::string_view what) {
      return absl::DataLossError(
          absl::StrCat(path, ": the record at byte ", at, " ", what));
    };
    if (file.size() - at < 12) return corrupt("is truncated in its length");
    const absl::string_view length_bytes = file.substr(at, 8);
    if (GetLittleEndian(file.substr(at + 8, 4)) != MaskedCrc32c(length_bytes)) {
      return corrupt("has a length that fails its CRC");
    }
    const uint64_t length = GetLittleEndian(length_bytes);
    if (file.size() - at - 12 < length || file.size() - at - 12 - length < 4) {
      return corrupt("is truncated in its data");
    }
    const absl::string_view data = file.substr(at + 12, length);
    if (GetLittleEndian(file.substr(at + 12 + length, 4)) != MaskedCrc32c(data)) {
      return corrupt("has data that fails its CRC");
    }
    tensorboard::Event event;
    if (!event.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
      return corrupt("is not an Event");
    }
    events.push_back(std::move(event));
    at += 12 + length + 4;
  }
  return events;
}

}  // namespace receipt_parity
