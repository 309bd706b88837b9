#include "tools/bench/csv_table.h"

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"

namespace rog {
namespace {

absl::Status NotANumber(absl::string_view s) {
  return absl::InvalidArgumentError(absl::StrCat("'", s, "' is not a number"));
}

}  // namespace

absl::Status ParseCsvNumber(absl::string_view s, double* out) {
  return absl::SimpleAtod(s, out) && std::isfinite(*out) ? absl::OkStatus() : NotANumber(s);
}

absl::Status ParseCsvNumber(absl::string_view s, uint64_t* out) {
  return absl::SimpleAtoi(s, out) ? absl::OkStatus() : NotANumber(s);
}

absl::Status ParseCsvNumber(absl::string_view s, int* out) {
  return absl::SimpleAtoi(s, out) ? absl::OkStatus() : NotANumber(s);
}

absl::string_view CsvVersion(absl::string_view text,
                             const std::vector<absl::string_view>& versions) {
  absl::string_view chosen = versions.empty() ? absl::string_view() : versions.front();
  size_t longest = 0;
  for (absl::string_view v : versions) {
    if (v.size() > longest && absl::StartsWith(text, v)) {
      chosen = v;
      longest = v.size();
    }
  }
  return chosen;
}

absl::StatusOr<std::vector<std::vector<absl::string_view>>> CsvRows(absl::string_view text,
                                                                    absl::string_view name,
                                                                    absl::string_view header) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  if (lines.empty() || absl::StripTrailingAsciiWhitespace(lines[0]) != header) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": the first line must be the header '", header,
                     "'; is this a file fmnist_worker --csv_dir wrote?"));
  }
  const size_t columns = std::count(header.begin(), header.end(), ',') + 1;
  std::vector<std::vector<absl::string_view>> rows;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<absl::string_view> f =
        absl::StrSplit(absl::StripTrailingAsciiWhitespace(lines[i]), ',');
    if (f.size() != columns) {
      // A robot killed mid-write leaves a short last line: skip only that.
      if (i + 1 == lines.size()) break;
      return absl::InvalidArgumentError(
          absl::StrCat(name, " line ", i + 1, ": ", f.size(), " fields, expected ", columns));
    }
    rows.push_back(std::move(f));
  }
  return rows;
}

}  // namespace rog
