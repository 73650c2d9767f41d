#include "study/trade_report_planted.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "study/markdown_table.h"
#include "study/trade_report_builder.h"

namespace receipt_parity {
namespace {

using markdown::HeaderRow;
using markdown::kDash;
using markdown::Row;

// `value` appended to `list` unless it is there already (first-seen order).
void AddOnce(const std::string& value, std::vector<std::string>* list) {
  if (std::find(list->begin(), list->end(), value) == list->end()) list->push_back(value);
}

std::string Cell(const PlantedMistakeRun& run) {
  if (!run.caught()) return "**MISSED**";
  return absl::StrCat("caught: ", absl::StrJoin(run.caught_by(), ", "));
}

const PlantedMistakeRun* Find(const PlantedMistakesFigures& figures, const std::string& mistake,
                              const std::string& setting) {
  for (const PlantedMistakeRun& run : figures.runs()) {
    if (run.mistake() == mistake && run.setting() == setting) return &run;
  }
  return nullptr;
}

}  // namespace

std::string PlantedMistakesLine(const PlantedMistakesFigures& figures) {
  if (figures.status() != kMeasured) {
    return absl::StrCat(kNotMeasured, " (", figures.note(), ")");
  }
  return absl::StrCat(figures.caught_runs(), " of ", figures.runs_size(),
                      " planted runs caught");
}

void AppendPlantedMistakes(const TradeReport& report, std::string* md) {
  const PlantedMistakesFigures& figures = report.planted_mistakes();
  absl::StrAppend(md, "## What these verdicts catch\n\n");
  if (figures.status() != kMeasured) {
    absl::StrAppend(md, "**", kNotMeasured, "** (", figures.note(), ").\n\n");
    return;
  }
  absl::StrAppend(md,
                  "Each mistake planted in an otherwise correct two-worker run "
                  "(`plugins/planted/`), in each setting; a run must fail parity (exit 3), "
                  "and one that passes fails the study. A cell lists every verdict its "
                  "`parity.json` failed. ",
                  PlantedMistakesLine(figures), ".\n\n");
  std::vector<std::string> mistakes, settings;
  for (const PlantedMistakeRun& run : figures.runs()) {
    AddOnce(run.mistake(), &mistakes);
    AddOnce(run.setting(), &settings);
  }
  std::vector<std::string> header = {"planted mistake"};
  header.insert(header.end(), settings.begin(), settings.end());
  absl::StrAppend(md, HeaderRow(header));
  for (const std::string& mistake : mistakes) {
    std::vector<std::string> cells = {mistake};
    for (const std::string& setting : settings) {
      const PlantedMistakeRun* run = Find(figures, mistake, setting);
      cells.push_back(run == nullptr ? kDash : Cell(*run));
    }
    absl::StrAppend(md, Row(cells));
  }
  absl::StrAppend(md, "\nFirst failure of each, in ", settings.front(), ":\n\n");
  for (const std::string& mistake : mistakes) {
    const PlantedMistakeRun* run = Find(figures, mistake, settings.front());
    if (run == nullptr) continue;
    absl::StrAppend(md, "- ", mistake, " (`", run->source(), "`): ",
                    run->first_failure().empty() ? kDash : run->first_failure(), "\n");
  }
  absl::StrAppend(md, "\n");
}

}  // namespace receipt_parity
