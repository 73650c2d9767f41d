// JSON artifacts, written and read through protobuf's JSON mapping: every
// report has a proto message, so the keys are the fields' proto names
// (snake_case) and every field is printed, defaults included ("pass": false
// is written, not left out).
#ifndef RECEIPT_PARITY_IO_JSON_FILE_H_
#define RECEIPT_PARITY_IO_JSON_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message.h"

namespace receipt_parity {

// The JSON text of `message` (indented, with a trailing newline).
// Protobuf 3.21 prints defaults by first building the whole document as a
// tree, a node of some 300 bytes per array element (250 MB for the
// first_step.json of a 250 000-parameter model); so every float or double
// array of 1024 elements or more, and every element of a repeated message
// field (not a map) holding 1024 values or more, is printed by protobuf
// apart and put in its place. The text is exactly ToJsonInOnePass's. When
// `arrays_printed_apart` is not null it is set to how many parts were (0
// when the message was printed in one pass).
std::string ToJson(const google::protobuf::Message& message,
                   int* arrays_printed_apart = nullptr);

// Protobuf's own one-pass printing of `message` with the options above:
// the text ToJson gives, at the memory cost described there.
std::string ToJsonInOnePass(const google::protobuf::Message& message);

// Writes ToJson(message) atomically (io/atomic_file.h), piece by piece:
// of the long arrays, one at a time is in memory as text. With `appended`
// (a small message of singular scalar fields, none named like one of
// `message`'s), the object ends with `appended`'s fields, after `message`'s
// own (io/json_appended_fields.h): how every artifact carries its stamp.
absl::Status WriteJsonFile(const std::string& path,
                           const google::protobuf::Message& message,
                           const google::protobuf::Message* appended = nullptr);

// Writes the same text as WriteJsonFile without copying `message`: its long
// parts are moved out of it while the rest is printed and put back after, so
// the caller's message is borrowed, changed while this runs, and left as it
// was. A message holding a map anywhere is written by WriteJsonFile instead
// (moving a map's entries makes protobuf keep a second copy of the map).
absl::Status WriteJsonFileInPlace(const std::string& path,
                                  google::protobuf::Message* message,
                                  const google::protobuf::Message* appended = nullptr);

// Parses `path` into `message`, and, with `appended`, the fields a writer
// appended into it. Errors name the path; unknown keys are errors (a
// renamed key must not be silently dropped), the appended fields included:
// a file written with them must be read with them.
absl::Status ReadJsonFile(const std::string& path,
                          google::protobuf::Message* message,
                          google::protobuf::Message* appended = nullptr);

// ReadJsonFile's parse, of `text` already read from `path` (named in
// errors), for a caller that reads the file its own way
// (io/untrusted_file.h).
absl::Status ParseJsonFileText(const std::string& path, const std::string& text,
                               google::protobuf::Message* message,
                               google::protobuf::Message* appended = nullptr);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_IO_JSON_FILE_H_
