#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace rtcosim::session {

/*
 * Values for people: a number with an SI prefix and a fixed count of
 * significant digits, so that a column of them reads at a glance and never
 * turns into "7.105e+05". Micro is written "u" (ASCII, as format_duration
 * and the config files' units do).
 *
 *   format_si(0.0123, "s")  "12.3 ms"      format_si(1.05, "s")   "1.05 s"
 *   format_si(9.83e-4, "s") "983 us"       format_si(-2.5e-3, "s") "-2.50 ms"
 *   format_si(0.0, "s")     "0 s"          format_si(NaN, "s")    "-"
 *
 * `min_exponent`/`max_exponent` bound the prefixes (multiples of 3). A value
 * beyond the largest prefix is printed whole ("710500 s", never rounded to
 * "711000 s"); one below the smallest keeps its significant digits
 * ("0.00100 ns"). Set-up and reporting code only: allocates.
 */
std::string format_si(double value, std::string_view unit, int digits = 3, int min_exponent = -12,
                      int max_exponent = 12);

// A duration in seconds: prefixes n, u, m and none; above 1000 s whole seconds.
std::string format_seconds(double seconds);
// The same for a duration held as integer nanoseconds.
std::string format_nanoseconds(std::int64_t ns);
// A count: the plain integer, all digits, no grouping, so that scripts and
// `awk` read it back; right-aligned in its column its magnitude shows.
std::string format_count(std::uint64_t n);
// A dimensionless value with `digits` significant digits ("%.3g"); "-" for NaN.
std::string format_general(double value, int digits = 3);

enum class Align { kLeft, kRight };

/*
 * TextTable: a table of text cells for the terminal. Each column is as wide
 * as its widest cell or header (UTF-8 code points counted as one character
 * each), columns are separated by at least two spaces, so no value ever
 * touches its neighbour however long it gets. Text columns are usually
 * left-aligned, numbers right-aligned. Lines carry no trailing spaces.
 */
class TextTable {
 public:
  struct Column {
    std::string header;
    Align align = Align::kRight;
  };

  explicit TextTable(std::vector<Column> columns);

  // One row; throws std::invalid_argument unless it has one cell per column.
  void add_row(std::vector<std::string> cells);
  [[nodiscard]] std::size_t rows() const noexcept { return rows_.size(); }

  // Header line and rows, each line starting with `indent`.
  [[nodiscard]] std::string render(std::string_view indent = "  ") const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Display width of UTF-8 text: its code points.
std::size_t display_width(std::string_view text);

/*
 * A column defined by what it shows of one row object: adding a figure to a
 * table is adding one Field line. Rows may be objects or pointer-likes
 * (unique_ptr, raw pointers), which are dereferenced.
 */
template <class Row>
struct Field {
  std::string header;
  Align align;
  std::function<std::string(const Row&)> cell;
};

template <class Row, class Range>
std::string render_table(const std::vector<Field<Row>>& fields, const Range& rows, std::string_view indent = "  ") {
  std::vector<TextTable::Column> columns;
  for (const auto& f : fields) columns.push_back({f.header, f.align});
  TextTable table(std::move(columns));
  for (const auto& r : rows) {
    const Row& row = [&]() -> const Row& {
      if constexpr (std::convertible_to<decltype(r), const Row&>) {
        return r;
      } else {
        return *r;
      }
    }();
    std::vector<std::string> cells;
    for (const auto& f : fields) cells.push_back(f.cell(row));
    table.add_row(std::move(cells));
  }
  return table.render(indent);
}

}  // namespace rtcosim::session
