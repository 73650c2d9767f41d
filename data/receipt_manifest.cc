#include "data/receipt_manifest.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "data/grayscale_image.h"
#include "data/label_map.h"
#include "io/untrusted_file.h"
#include "logging/glog.h"
#include "io/atomic_file.h"

namespace receipt_parity {
namespace {

namespace fs = std::filesystem;

class LineErrors {
 public:
  explicit LineErrors(const std::string& manifest) : manifest_(manifest) {}
  absl::Status operator()(int line, absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(manifest_, ":", line, ": ", message));
  }

 private:
  const std::string& manifest_;
};

// Where a receipt_id was first seen, and with which label.
struct FirstSeen {
  int identity = 0;
  int line = 0;
  int label = 0;
};

// Checks with stat (following links), before anything opens `file`, that it
// is a regular file: opening a FIFO would block, reading /dev/zero never
// ends.
absl::Status CheckRegularImageFile(const fs::path& file, int line,
                                   const LineErrors& error) {
  std::error_code ec;
  const fs::file_status status = fs::status(file, ec);
  if (status.type() == fs::file_type::not_found) {
    return error(line, absl::StrCat("image file not found: ", file.string()));
  }
  if (ec) {
    return error(line, absl::StrCat("cannot read image ", file.string(), ": ",
                                    ec.message()));
  }
  if (status.type() != fs::file_type::regular) {
    return error(line, absl::StrCat("image ", file.string(), " is ",
                                    NonRegularKind(status.type()),
                                    ", not a regular file"));
  }
  return absl::OkStatus();
}

// The header's claimed size is checked before any pixel is allocated.
absl::StatusOr<GrayPixels> DecodeCapture(const fs::path& file,
                                         absl::string_view bytes,
                                         int image_size, int line,
                                         const LineErrors& error) {
  absl::StatusOr<ImageSize> size = ReadGrayscaleImageSize(bytes);
  if (size.ok() && (size->width != image_size || size->height != image_size)) {
    return error(line, absl::StrCat("image ", file.string(), " is ",
                                    size->width, "x", size->height,
                                    ", expected ", image_size, "x", image_size,
                                    " (data.image_size); refused by its "
                                    "header, before decoding"));
  }
  absl::StatusOr<GrayImage> image =
      size.ok() ? DecodeGrayscaleImage(bytes) : size.status();
  if (!image.ok()) {
    return error(line, absl::StrCat("unreadable image ", file.string(), ": ",
                                    image.status().message()));
  }
  return std::move(image->pixels);
}

absl::StatusOr<GrayPixels> LoadCapture(const fs::path& file, int image_size,
                                       int line, const LineErrors& error) {
  absl::Status regular = CheckRegularImageFile(file, line, error);
  if (!regular.ok()) return regular;
  absl::StatusOr<std::string> bytes = ReadFileToString(file.string());
  if (absl::IsNotFound(bytes.status())) {
    return error(line, absl::StrCat("image file not found: ", file.string()));
  }
  if (!bytes.ok()) {
    return error(line, absl::StrCat("cannot read image ", file.string(), ": ",
                                    bytes.status().message()));
  }
  return DecodeCapture(file, *bytes, image_size, line, error);
}

// The position of the first byte of `text` that does not begin or continue
// a well-formed UTF-8 sequence (no overlong forms, surrogates or code points
// above U+10FFFF), or npos.
size_t FirstInvalidUtf8Byte(absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char lead = text[i];
    int length = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
    if (lead < 0x80) {
      length = 1;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) lo = 0xA0;
      if (lead == 0xED) hi = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) lo = 0x90;
      if (lead == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    for (int k = 1; k < length; ++k) {
      if (i + k >= text.size()) return i + k;
      const unsigned char next = text[i + k];
      const bool ok =
          k == 1 ? (next >= lo && next <= hi) : (next >= 0x80 && next <= 0xBF);
      if (!ok) return i + k;
    }
    i += length;
  }
  return absl::string_view::npos;
}

absl::Status CheckUtf8ReceiptId(absl::string_view receipt_id, int line,
                                const LineErrors& error) {
  const size_t bad = FirstInvalidUtf8Byte(receipt_id);
  if (bad == absl::string_view::npos) return absl::OkStatus();
  return error(line,
               absl::StrCat("receipt_id \"", absl::CHexEscape(receipt_id),
                            "\" is not valid UTF-8 (byte ", bad + 1, ")"));
}

// The manifest's text (a leading UTF-8 BOM dropped) and its lines, the
// header checked and, with max_rows >= 0, the rows counted against it.
struct ManifestText {
  std::string text;
  std::vector<absl::string_view> lines;
};

absl::StatusOr<ManifestText> ReadManifest(const std::string& manifest_path, int64_t max_rows,
                                          const LineErrors& error) {
  absl::StatusOr<std::string> text = ReadFileToString(manifest_path);
  if (!text.ok()) {
    return absl::Status(text.status().code(), absl::StrCat("cannot read receipt manifest: ",
                                                           text.status().message()));
  }
  ManifestText manifest{*std::move(text), {}};
  absl::string_view contents = manifest.text;
  absl::ConsumePrefix(&contents, "\xEF\xBB\xBF");
  manifest.lines = absl::StrSplit(contents, '\n');
  const absl::string_view header =
      absl::StripAsciiWhitespace(manifest.lines.empty() ? "" : manifest.lines[0]);
  if (header != kManifestHeader) {
    return error(1, absl::StrCat("missing header: expected \"", kManifestHeader, "\", got \"",
                                 header, "\""));
  }
  if (max_rows >= 0) {
    const auto rows = std::count_if(
        manifest.lines.begin() + 1, manifest.lines.end(),
        [](absl::string_view line) { return !absl::StripAsciiWhitespace(line).empty(); });
    if (rows > max_rows) {
      return absl::ResourceExhaustedError(absl::StrCat(
          manifest_path, ": ", rows, " rows, more than the ", max_rows,
          " whose pixels fit in memory"));
    }
  }
  return manifest;
}

// One row's fields, each stripped and checked: three columns, none empty,
// a UTF-8 receipt id, a known label.
struct ManifestRow {
  std::string receipt_id;
  absl::string_view image;
  absl::string_view label_name;
  int label = 0;
};

absl::StatusOr<ManifestRow> ParseRow(absl::string_view text, int line,
                                     const LineErrors& error) {
  std::vector<absl::string_view> fields = absl::StrSplit(text, ',');
  if (fields.size() != 3) {
    return error(line, absl::StrCat("expected 3 columns (", kManifestHeader, "), got ",
                                    fields.size()));
  }
  constexpr const char* kColumns[] = {"receipt_id", "image", "label"};
  for (int c = 0; c < 3; ++c) {
    fields[c] = absl::StripAsciiWhitespace(fields[c]);
    if (fields[c].empty()) return error(line, absl::StrCat("empty ", kColumns[c], " field"));
  }
  if (absl::Status utf8 = CheckUtf8ReceiptId(fields[0], line, error); !utf8.ok()) return utf8;
  absl::StatusOr<int> label = LabelId(fields[2]);
  if (!label.ok()) return error(line, label.status().message());
  return ManifestRow{std::string(fields[0]), fields[1], fields[2], *label};
}

// The identities of the rows added so far: a row's capture joins its
// receipt id's identity; a repeated (id, image) row and an id with two
// labels are refused naming both lines.
class IdentityCollector {
 public:
  IdentityCollector(fs::path folder, int image_size, const LineErrors& error)
      : folder_(std::move(folder)), image_size_(image_size), error_(error) {}

  absl::Status Add(const ManifestRow& row, int line) {
    const fs::path file = (folder_ / std::string(row.image)).lexically_normal();
    const auto [first, new_row] = rows_.emplace(std::make_pair(row.receipt_id, file.string()),
                                                line);
    if (!new_row) {
      return error_(line, absl::StrCat("duplicate row: receipt_id \"", row.receipt_id,
                                       "\" with image \"", row.image, "\" already on line ",
                                       first->second));
    }
    const auto [seen, new_id] = by_id_.emplace(
        row.receipt_id, FirstSeen{static_cast<int>(identities_.size()), line, row.label});
    if (!new_id && seen->second.label != row.label) {
      return error_(line, absl::StrCat("conflicting labels for receipt_id \"", row.receipt_id,
                                       "\": \"", row.label_name, "\" here, \"",
                                       LabelNames()[seen->second.label], "\" on line ",
                                       seen->second.line));
    }
    absl::StatusOr<GrayPixels> pixels = LoadCapture(file, image_size_, line, error_);
    if (!pixels.ok()) return pixels.status();
    if (new_id) identities_.push_back(ReceiptIdentity{row.receipt_id, row.label, {}});
    identities_[seen->second.identity].captures.push_back(*std::move(pixels));
    return absl::OkStatus();
  }

  std::vector<ReceiptIdentity> Take() { return std::move(identities_); }

 private:
  const fs::path folder_;
  const int image_size_;
  const LineErrors& error_;
  std::vector<ReceiptIdentity> identities_;
  absl::flat_hash_map<std::string, FirstSeen> by_id_;
  // (receipt_id, normalised image path) -> line of its first row.
  std::map<std::pair<std::string, std::string>, int> rows_;
};

}  // namespace

absl::StatusOr<std::vector<ReceiptIdentity>> LoadReceiptManifest(
    const std::string& manifest_path, int image_size, int64_t max_rows) {
  CHECK_GT(image_size, 0);
  const LineErrors error(manifest_path);
  absl::StatusOr<ManifestText> manifest = ReadManifest(manifest_path, max_rows, error);
  if (!manifest.ok()) return manifest.status();
  IdentityCollector collector(fs::path(manifest_path).parent_path(), image_size, error);
  for (size_t i = 1; i < manifest->lines.size(); ++i) {
    const int line = static_cast<int>(i) + 1;
    if (absl::StripAsciiWhitespace(manifest->lines[i]).empty()) continue;
    absl::StatusOr<ManifestRow> row = ParseRow(manifest->lines[i], line, error);
    if (!row.ok()) return row.status();
    if (absl::Status s = collector.Add(*row, line); !s.ok()) return s;
  }
  std::vector<ReceiptIdentity> identities = collector.Take();
  if (identities.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(manifest_path, ": no rows after the header"));
  }
  return identities;
}

}  // namespace receipt_parity
