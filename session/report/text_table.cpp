#include "session/report/text_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace rtcosim::session {

namespace {

const char* prefix_of(int exponent) {
  switch (exponent) {
    case -15:
      return "f";
    case -12:
      return "p";
    case -9:
      return "n";
    case -6:
      return "u";
    case -3:
      return "m";
    case 3:
      return "k";
    case 6:
      return "M";
    case 9:
      return "G";
    case 12:
      return "T";
    default:
      return "";
  }
}

int floor_to_multiple_of_3(int e) { return e >= 0 ? e / 3 * 3 : -((-e + 2) / 3 * 3); }

std::string with_unit(std::string number, const char* prefix, std::string_view unit) {
  const std::string suffix = std::string(prefix) + std::string(unit);
  return suffix.empty() ? number : number + " " + suffix;
}

}  // namespace

std::string format_si(double value, std::string_view unit, int digits, int min_exponent, int max_exponent) {
  if (std::isnan(value)) return "-";
  if (std::isinf(value)) return with_unit(value < 0 ? "-inf" : "inf", "", unit);
  if (value == 0.0) return with_unit("0", "", unit);
  digits = std::clamp(digits, 1, 17);
  // The rounding is printf's, once: its digits are then only placed around
  // the decimal point, so 999.96 ms becomes "1.00 s", never "1000 ms".
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", digits - 1, std::fabs(value));
  std::string mantissa(1, buf[0]);
  if (digits > 1) mantissa += std::string(buf + 2, static_cast<std::size_t>(digits - 1));
  const int exponent = std::atoi(std::strchr(buf, 'e') + 1);
  const int scale = std::clamp(floor_to_multiple_of_3(exponent), min_exponent, max_exponent);
  const int shift = exponent - scale;  // digits before the point, minus one
  std::string number;
  if (shift >= digits) {
    // Beyond the largest prefix: the whole number, not a rounded one.
    std::snprintf(buf, sizeof buf, "%.0f", std::fabs(value) / std::pow(10.0, scale));
    number = buf;
  } else if (shift >= 0) {
    number = mantissa.substr(0, static_cast<std::size_t>(shift + 1));
    if (shift + 1 < digits) number += "." + mantissa.substr(static_cast<std::size_t>(shift + 1));
  } else {
    number = "0." + std::string(static_cast<std::size_t>(-shift - 1), '0') + mantissa;
  }
  return with_unit((value < 0 ? "-" : "") + number, prefix_of(scale), unit);
}

std::string format_seconds(double seconds) {
  // Below half a nanosecond a duration is rounding noise of sums of steps
  // (lag 6.9e-18 s), not a figure: the clocks count whole nanoseconds.
  if (std::fabs(seconds) < 0.5e-9) seconds = 0.0;
  return format_si(seconds, "s", 3, -9, 0);
}

std::string format_nanoseconds(std::int64_t ns) { return format_seconds(static_cast<double>(ns) * 1e-9); }

std::string format_count(std::uint64_t n) { return std::to_string(n); }

std::string format_general(double value, int digits) {
  if (std::isnan(value)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", std::clamp(digits, 1, 17), value);
  return buf;
}

std::size_t display_width(std::string_view text) {
  // UTF-8 continuation bytes are 10xxxxxx.
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

TextTable::TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size()) {
    throw std::invalid_argument("table row has " + std::to_string(cells.size()) + " cells, expected " +
                                std::to_string(columns_.size()));
  }
  rows_.push_back(std::move(cells));
}

std::string TextTable::render(std::string_view indent) const {
  std::vector<std::size_t> width(columns_.size(), 0);
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    width[c] = display_width(columns_[c].header);
    for (const auto& row : rows_) width[c] = std::max(width[c], display_width(row[c]));
  }
  std::string out;
  auto line = [&](auto&& cell_of) {
    std::string text(indent);
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      const std::string& cell = cell_of(c);
      const std::string fill(width[c] - display_width(cell), ' ');
      if (c > 0) text += "  ";
      text += columns_[c].align == Align::kRight ? fill + cell : cell + fill;
    }
    text.erase(text.find_last_not_of(' ') + 1);
    out += text + '\n';
  };
  line([&](std::size_t c) -> const std::string& { return columns_[c].header; });
  for (const auto& row : rows_) line([&](std::size_t c) -> const std::string& { return row[c]; });
  return out;
}

}  // namespace rtcosim::session
