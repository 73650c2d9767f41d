// TensorBoard event files: the run's curves where a team already looks.
//
// A file is a sequence of TFRecords, each
//   uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)
// (little-endian; masked_crc32c(x) = rotr15(crc32c(x)) + 0xa282ead8), and
// the data of each is a serialized tensorboard.Event
// (third_party/tensorboard/event.proto). The first event carries
// file_version "brain.Event:2"; a file that continues an earlier run
// (restart_step) then carries a SessionLog START at that step, on which
// TensorBoard drops what earlier files recorded at steps >= it; then one
// event per scalar.
//
// CRC32C (Castagnoli) is computed here because no library this project
// builds with provides it (Debian 12's Abseil predates absl/crc; zlib and
// OpenSSL have CRC-32 only).
#ifndef RECEIPT_PARITY_IO_TENSORBOARD_EVENT_FILE_H_
#define RECEIPT_PARITY_IO_TENSORBOARD_EVENT_FILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "third_party/tensorboard/event.pb.h"

namespace receipt_parity {

// One value of one curve: TensorBoard's scalar `tag` at `step`.
struct ScalarPoint {
  std::string tag;
  int64_t step = 0;
  double value = 0;
};

// What one event file holds.
struct EventFileContents {
  double wall_time = 0;  // seconds since the epoch, on every event
  // Set when the file continues a run from this step (a resumed run's
  // first update): the SessionLog START of the file comment.
  std::optional<int64_t> restart_step;
  std::vector<ScalarPoint> scalars;
};

// CRC32C of `data`, and the masked form TFRecord stores.
uint32_t Crc32c(absl::string_view data);
uint32_t MaskedCrc32c(absl::string_view data);

// One TFRecord holding `data`.
std::string FrameTfRecord(absl::string_view data);

// The whole file's bytes (the file comment).
std::string EncodeEventFile(const EventFileContents& contents);

// "events.out.tfevents.<unix_seconds, 10 digits>.attempt-<attempt, 5
// digits>.receipt_parity": TensorBoard reads every file whose name holds
// "tfevents", in name order, so an attempt's file sorts after every
// earlier attempt's. REQUIRES: unix_seconds and attempt >= 0.
std::string EventFileName(int64_t unix_seconds, int attempt);

// Writes EncodeEventFile(contents) to DIR/NAME atomically (io/atomic_file.h)
// after creating DIR and removing any temporary file a writer that died
// left in it (its name holds "tfevents" too, so TensorBoard would read it).
// Errors name the path: InvalidArgument when DIR is a link (nothing is
// written through it) or not a folder; Internal for I/O.
absl::Status WriteEventFile(const std::string& dir, const std::string& name,
                            const EventFileContents& contents);

// Every event of the file at `path`, each record's length and data checked
// against their CRCs. DataLoss naming the path and the record's offset for
// a truncated or corrupt record; NotFound for a missing file.
absl::StatusOr<std::vector<tensorboard::Event>> ReadEventFile(const std::string& path);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_IO_TENSORBOARD_EVENT_FILE_H_
