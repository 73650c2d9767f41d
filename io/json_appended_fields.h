// One JSON object holding two messages: a message's own fields, then the
// top-level fields of a second, small message (`appended`) after them.
//
// This is how a schema shared by many files is kept once: every artifact of
// a run folder ends with the same keys ("config_fingerprint", "attempt"),
// defined once in their own message, instead of a copy of the two fields in
// every artifact's schema. The text is protobuf's own printing of each
// message (io/json_file.h's format), and reading is protobuf's own parser
// over a type that is the message's with the appended fields added, so an
// unknown key is still an error.
//
// REQUIRES everywhere: `appended` has only singular scalar fields (numbers,
// strings, bools), none named like one of `message`'s fields.
#ifndef RECEIPT_PARITY_IO_JSON_APPENDED_FIELDS_H_
#define RECEIPT_PARITY_IO_JSON_APPENDED_FIELDS_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "io/atomic_file.h"

namespace receipt_parity {

// A sink for the JSON text of one message (as io/json_file.h prints it:
// "{\n", its fields, "\n}\n"), passed on to `next` with the fields of
// `appended_json` (a second message printed the same way) added before the
// closing brace, indented alike. Every piece is passed on as it comes, but
// for the last three bytes, held back until Finish(). Not thread-safe;
// `next` must outlive it.
class AppendingJsonSink {
 public:
  AppendingJsonSink(std::string appended_json, const ByteSink& next);

  // Passes `bytes` on (all but the last three bytes seen so far).
  absl::Status Write(absl::string_view bytes);
  // Ends the object with `appended`'s fields. FailedPrecondition when the
  // text written does not end as one JSON object printed by protobuf.
  absl::Status Finish();

 private:
  std::string appended_fields_;  // appended_json without its braces
  const ByteSink& next_;
  std::string held_;  // the last bytes seen, not yet passed on
  size_t passed_on_ = 0;
};

// Parses `json` (one object holding the fields of both messages) into
// `message` and `appended`. Protobuf's strict parser: a key of neither
// message, or a value of the wrong type, is InvalidArgument with protobuf's
// message; a key missing from the text leaves its field at its default.
absl::Status ParseJsonWithAppendedFields(absl::string_view json,
                                         google::protobuf::Message* message,
                                         google::protobuf::Message* appended);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_IO_JSON_APPENDED_FIELDS_H_
