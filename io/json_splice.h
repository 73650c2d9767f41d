// Where the parts that io/json_file.cc prints apart go back into the text
// of the rest of the message (the skeleton), and how they are indented
// there. Text only: it knows protobuf's JSON layout (one value per line,
// one space of indent per level), not its messages.
//
// A part is marked in the skeleton by a value printed on a line of its own:
// - an array's marker is the one element of a one-element array; the part
//   replaces that array from '[' to ']';
// - a whole element's marker is one field line of a marker element; the
//   part replaces that element from '{' to '}'.
#ifndef RECEIPT_PARITY_IO_JSON_SPLICE_H_
#define RECEIPT_PARITY_IO_JSON_SPLICE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "io/atomic_file.h"

namespace receipt_parity {

struct SpliceMarker {
  // The marker's text as protobuf prints it, without indent or comma.
  std::string text;
  // An element's marker (its braces are replaced), not an array's.
  bool whole_element = false;
};

// Where a part goes: [open, close] of the skeleton is replaced by it, with
// `indent` added after each of its line breaks; `part` is the marker's
// index in the list given.
struct SplicePlace {
  size_t open = 0;
  size_t close = 0;
  std::string indent;
  size_t part = 0;
};

// Every marker's place in `skeleton`, ordered by position; empty when any
// marker does not start a line exactly once (the message holds the marker's
// value itself) or its brackets are not where protobuf puts them.
std::vector<SplicePlace> FindSplicePlaces(const std::string& skeleton,
                                          const std::vector<SpliceMarker>& markers);

// Passes `text` to `sink` with `indent` added after each line break, in
// pieces of about 64 KiB.
absl::Status WriteIndented(absl::string_view text, const std::string& indent,
                           const ByteSink& sink);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_IO_JSON_SPLICE_H_
