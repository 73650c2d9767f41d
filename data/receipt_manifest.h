// Real receipt data: a CSV manifest plus grayscale images.
//
// The manifest's first line is exactly `receipt_id,image,label`; each further
// non-blank line is one capture: a receipt id, an image path (relative to the
// manifest's folder unless absolute; PNG or PGM, see data/grayscale_image.h)
// and a label name of data/label_map.h. Fields are separated by commas and
// trimmed of surrounding whitespace; quoting is not supported, so fields
// cannot contain commas. A UTF-8 byte order mark and CRLF line ends are
// accepted. Several rows with one receipt_id and different images are several
// captures of one identity; they must all carry the same label.
//
// Every error names the manifest and the 1-based line, "PATH:LINE: ...":
// missing or wrong header, wrong column count, empty field, an exact
// duplicate row (same receipt_id and image: the message names the first
// line), unknown label (listing the valid ones), conflicting labels for one
// receipt_id (naming the earlier line), receipt_id not valid UTF-8, image
// file missing, not a regular file (a folder, FIFO or device: refused from
// stat, before it is opened), unreadable or corrupt, image not image_size x
// image_size (refused from its header, before its pixels are allocated). A
// manifest that cannot be read or has no rows is an error naming the
// manifest.
// Thread safety: a pure function (reads files).
#ifndef RECEIPT_PARITY_DATA_RECEIPT_MANIFEST_H_
#define RECEIPT_PARITY_DATA_RECEIPT_MANIFEST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/receipt_identity.h"

namespace receipt_parity {

inline constexpr char kManifestHeader[] = "receipt_id,image,label";

// The identities of the manifest, in order of first appearance, each with its
// captures in manifest order. With `max_rows` >= 0, a manifest of more rows
// is refused before any image is read: ResourceExhausted,
// "PATH: N rows, more than the M whose pixels fit in memory".
// REQUIRES: image_size > 0.
absl::StatusOr<std::vector<ReceiptIdentity>> LoadReceiptManifest(
    const std::string& manifest_path, int image_size, int64_t max_rows = -1);

}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_DATA_RECEIPT_MANIFEST_H_
