// Reading a CSV file whose layout changed over the years as data, not as
// code: a file kind is a table of every column it ever had, each with the
// record field it fills, and its versions are their header lines. One reader
// serves every version of every kind: it picks the version by the header,
// fills each record column by column as the table says, and gives the
// columns that version lacks what the table says they mean.
#ifndef ROG_TOOLS_BENCH_CSV_TABLE_H_
#define ROG_TOOLS_BENCH_CSV_TABLE_H_

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace rog {

// One column a file kind has had: its name in the header and how a field
// fills the record. A number goes into a double or a uint64_t member; a
// bool member takes an integer, true when not 0; a function reads what a
// member cannot (an error says what is wrong with the field, without the
// file and line, which the reader adds).
template <typename Record>
struct CsvColumn {
  absl::string_view name;
  std::variant<double Record::*, uint64_t Record::*, bool Record::*,
               absl::Status (*)(absl::string_view, Record*)>
      field;
  // What a version without this column means by it, once the columns it has
  // are read; nullptr: the member's default.
  void (*absent)(Record*) = nullptr;
};

// A file kind: every column it has had, and each version's header line,
// oldest first.
template <typename Record>
struct CsvKind {
  std::vector<CsvColumn<Record>> columns;
  std::vector<absl::string_view> versions;
};

// The number in a field, or an InvalidArgument error "'S' is not a number"
// (a double must be finite).
absl::Status ParseCsvNumber(absl::string_view s, double* out);
absl::Status ParseCsvNumber(absl::string_view s, uint64_t* out);
absl::Status ParseCsvNumber(absl::string_view s, int* out);

// The version of `versions` whose header `text` starts with (the longest if
// several do), else the oldest: the header its first line is then held to.
absl::string_view CsvVersion(absl::string_view text,
                             const std::vector<absl::string_view>& versions);

// The data lines of `text` below its header line, which must be `header`,
// each split into exactly the header's number of fields, except a short last
// line, which is left out (a robot killed mid-write). Errors name `name`
// and the line.
absl::StatusOr<std::vector<std::vector<absl::string_view>>> CsvRows(absl::string_view text,
                                                                    absl::string_view name,
                                                                    absl::string_view header);

// Fills `r`'s field of `column` from the field's text `s`.
template <typename Record>
absl::Status ReadCsvField(const CsvColumn<Record>& column, absl::string_view s, Record* r) {
  return std::visit(
      [&](auto field) -> absl::Status {
        using Field = decltype(field);
        if constexpr (std::is_same_v<Field, bool Record::*>) {
          int v = 0;
          absl::Status status = ParseCsvNumber(s, &v);
          r->*field = v != 0;
          return status;
        } else if constexpr (std::is_member_object_pointer_v<Field>) {
          return ParseCsvNumber(s, &(r->*field));
        } else {
          return field(s, r);
        }
      },
      column.field);
}

// The records of a CSV file of `kind`, header line first, in whichever of
// its versions the header names. Errors name `name`, the line (counting
// the lines that are not empty) and what is wrong.
template <typename Record>
absl::StatusOr<std::vector<Record>> ReadCsv(absl::string_view text, absl::string_view name,
                                            const CsvKind<Record>& kind) {
  const absl::string_view header = CsvVersion(text, kind.versions);
  auto rows = CsvRows(text, name, header);
  if (!rows.ok()) return rows.status();
  // The version's columns in its header's order, then the others.
  std::vector<const CsvColumn<Record>*> present, absent;
  for (absl::string_view column : absl::StrSplit(header, ',')) {
    auto c = std::find_if(kind.columns.begin(), kind.columns.end(),
                          [&](const CsvColumn<Record>& c) { return c.name == column; });
    if (c == kind.columns.end()) {
      return absl::InternalError(absl::StrCat("the column table has no '", column, "'"));
    }
    present.push_back(&*c);
  }
  for (const CsvColumn<Record>& c : kind.columns) {
    if (std::find(present.begin(), present.end(), &c) == present.end()) absent.push_back(&c);
  }
  std::vector<Record> out;
  for (size_t i = 0; i < rows->size(); ++i) {
    Record r;
    for (size_t k = 0; k < present.size(); ++k) {
      absl::Status status = ReadCsvField(*present[k], (*rows)[i][k], &r);
      if (!status.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, " line ", i + 2, ": ", status.message()));
      }
    }
    for (const CsvColumn<Record>* c : absent) {
      if (c->absent != nullptr) c->absent(&r);
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace rog

#endif  // ROG_TOOLS_BENCH_CSV_TABLE_H_
