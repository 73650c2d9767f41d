// SVG elements as text, for the trade report's picture
// (study/trade_report_svg.h). Numbers are written with one decimal.
#ifndef RECEIPT_PARITY_STUDY_SVG_ELEMENTS_H_
#define RECEIPT_PARITY_STUDY_SVG_ELEMENTS_H_

#include <string>

namespace receipt_parity {
namespace svg {

// The runs' colours: one worker, two workers, two workers over MPI, two
// workers in bf16, gradient sync; the learning rate's line.
inline constexpr char kOneColor[] = "#1f5fa8";
inline constexpr char kTwoColor[] = "#e8710a";
inline constexpr char kMpiColor[] = "#1b998b";
inline constexpr char kBf16Color[] = "#bf3989";
inline constexpr char kRateColor[] = "#6e7781";
inline constexpr char kSyncColor[] = "#8250df";

// `text` with &, <, > and " escaped.
std::string Escape(const std::string& text);

// <text>; `attrs` is added verbatim (e.g. "text-anchor=\"end\"").
std::string Text(double x, double y, const std::string& text, double size,
                 const std::string& attrs = "");

std::string Line(double x1, double y1, double x2, double y2,
                 const std::string& stroke, double width,
                 const std::string& attrs = "");

inline constexpr char kFont[] = "DejaVu Sans, Helvetica, Arial, sans-serif";

// The opening of a standalone document of `width` x `height` in the
// pictures' font, on a white background (close it with "</svg>\n").
std::string DocumentStart(double width, double height);

// A tick step of 1, 2 or 5 × 10^k giving about `target` intervals of
// `range` (1 when range is not positive).
double NiceStep(double range, int target);

// `value` with as many decimals as `step` needs.
std::string TickLabel(double value, double step);

// A negative width or height draws nothing (0).
std::string Rect(double x, double y, double w, double h,
                 const std::string& fill, const std::string& attrs = "");

}  // namespace svg
}  // namespace receipt_parity

#endif  // RECEIPT_PARITY_STUDY_SVG_ELEMENTS_H_
