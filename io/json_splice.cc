#include "io/json_splice.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace receipt_parity {
namespace {

size_t LineStart(const std::string& json, size_t at) {
  const size_t newline = at == 0 ? std::string::npos : json.rfind('\n', at - 1);
  return newline == std::string::npos ? 0 : newline + 1;
}

// Where `marker` begins a line of `json` after its indent and ends it (or
// is followed by a comma): its position, or npos unless it does so exactly
// once.
size_t OnlyPlace(const std::string& json, const std::string& marker) {
  size_t found = std::string::npos;
  for (size_t at = json.find(marker); at != std::string::npos;
       at = json.find(marker, at + 1)) {
    const size_t start = LineStart(json, at);
    const size_t end = at + marker.size();
    if (at == start ||
        json.find_first_not_of(' ', start) != at || end >= json.size() ||
        (json[end] != '\n' && json[end] != ',')) {
      continue;
    }
    if (found != std::string::npos) return std::string::npos;
    found = at;
  }
  return found;
}

// The braces of the marker element whose marker field's line starts at
// `at`, indented by `indent`: the nearest lines above and below indented
// one less, "{" and "}" (or "},"); nullopt when they are not there.
std::optional<std::pair<size_t, size_t>> ElementBraces(const std::string& json,
                                                       size_t at, size_t indent) {
  if (indent == 0) return std::nullopt;
  const std::string outer(indent - 1, ' ');
  size_t line = LineStart(json, at);
  while (line > 0 && json.compare(line, indent, std::string(indent, ' ')) == 0) {
    line = LineStart(json, line - 1);
  }
  if (json.compare(line, indent, outer + "{") != 0) return std::nullopt;
  const size_t open = line + indent - 1;
  for (size_t next = json.find('\n', at); next != std::string::npos;
       next = json.find('\n', next + 1)) {
    if (json.compare(next + 1, indent, std::string(indent, ' ')) == 0) continue;
    if (json.compare(next + 1, indent, outer + "}") != 0) return std::nullopt;
    return std::make_pair(open, next + indent);
  }
  return std::nullopt;
}

}  // namespace

std::vector<SplicePlace> FindSplicePlaces(const std::string& skeleton,
                                          const std::vector<SpliceMarker>& markers) {
  std::vector<SplicePlace> places;
  for (size_t i = 0; i < markers.size(); ++i) {
    const size_t at = OnlyPlace(skeleton, markers[i].text);
    if (at == std::string::npos) return {};
    const size_t indent_here = at - LineStart(skeleton, at);
    if (markers[i].whole_element) {
      const auto braces = ElementBraces(skeleton, at, indent_here);
      if (!braces.has_value()) return {};
      // Printed alone, the element's fields are indented by 1.
      places.push_back({braces->first, braces->second,
                        std::string(indent_here - 1, ' '), i});
      continue;
    }
    // At the top level an array's elements are two levels in.
    constexpr size_t kIndentAlone = 2;
    if (indent_here < kIndentAlone) return {};
    places.push_back({skeleton.rfind('[', at), skeleton.find(']', at),
                      std::string(indent_here - kIndentAlone, ' '), i});
  }
  std::sort(places.begin(), places.end(),
            [](const SplicePlace& a, const SplicePlace& b) { return a.open < b.open; });
  return places;
}

absl::Status WriteIndented(absl::string_view text, const std::string& indent,
                           const ByteSink& sink) {
  constexpr size_t kPiece = 64 << 10;
  std::string piece;
  piece.reserve(kPiece + indent.size() + 1);
  for (char c : text) {
    piece.push_back(c);
    if (c == '\n') piece.append(indent);
    if (piece.size() >= kPiece) {
      if (absl::Status s = sink(piece); !s.ok()) return s;
      piece.clear();
    }
  }
  return sink(piece);
}

}  // namespace receipt_parity
