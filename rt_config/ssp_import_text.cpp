// The SSP importer's text helpers (ssp_import_internal.hpp): reading an XML file of the archive within its
// limits, archive paths, SSP types, UTF-8 and YAML quoting. Kept apart from the Importer so that what must read
// back the same in the graph is in one place.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <system_error>

#include "rt_config/ssp_import_internal.hpp"

namespace rtcosim::config {

LineIndex::LineIndex(std::string_view text) {
  starts_.push_back(0);
  for (std::size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') starts_.push_back(i + 1);
}

std::size_t LineIndex::line_at(std::ptrdiff_t offset) const noexcept {
  if (offset <= 0) return 1;
  // The lines that begin at or before the offset; past the end, all of them.
  return static_cast<std::size_t>(std::upper_bound(starts_.begin(), starts_.end(), static_cast<std::size_t>(offset)) -
                                  starts_.begin());
}

namespace ssp_detail {

namespace {

std::size_t count_nodes(const pugi::xml_node& root, std::size_t limit) {
  std::size_t n = 0;
  // Iterative: a deeply nested hostile file must not exhaust the stack.
  pugi::xml_node cur = root.first_child();
  while (cur) {
    ++n;
    for (auto a = cur.first_attribute(); a; a = a.next_attribute()) ++n;
    if (n > limit) return n;
    if (cur.first_child()) {
      cur = cur.first_child();
      continue;
    }
    while (cur && !cur.next_sibling() && cur != root) cur = cur.parent();
    if (!cur || cur == root) break;
    cur = cur.next_sibling();
  }
  return n;
}

// The UTF-8 sequence at s[i]: its length, and its code point in *cp; 0
// where the bytes are not UTF-8 (a stray continuation byte, a cut or
// overlong sequence, a surrogate, beyond U+10FFFF).
std::size_t utf8_at(std::string_view s, std::size_t i, std::uint32_t* cp) {
  const auto byte = [&](std::size_t k) { return static_cast<std::uint32_t>(static_cast<unsigned char>(s[k])); };
  const std::uint32_t c = byte(i);
  std::size_t n = 0;
  std::uint32_t v = 0, least = 0;
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  if ((c & 0xe0) == 0xc0) {
    n = 2, v = c & 0x1f, least = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3, v = c & 0x0f, least = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4, v = c & 0x07, least = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    v = (v << 6) | (byte(i + k) & 0x3f);
  }
  if (v < least || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
  *cp = v;
  return n;
}

}  // namespace

std::string_view local(const char* name) {
  std::string_view s(name);
  const auto colon = s.find(':');
  return colon == std::string_view::npos ? s : s.substr(colon + 1);
}

void read_xml(XmlFile& f, const fs::path& path, const SspLimits& limits) {
  std::error_code ec;
  const auto st = fs::symlink_status(path, ec);
  if (ec || !fs::is_regular_file(st)) throw SspError(f.label + ": not in the archive (or not a plain file)");
  const auto size = fs::file_size(path, ec);
  if (ec || size > limits.max_xml_bytes) {
    throw SspError(f.label + ": " + std::to_string(size) + " bytes — more than the " +
                   std::to_string(limits.max_xml_bytes) + " an XML file of an SSP may have");
  }
  std::ifstream in(path, std::ios::binary);
  f.text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) throw SspError(f.label + ": cannot be read");
  f.lines = LineIndex(f.text);
  const auto parsed = f.doc.load_buffer(f.text.data(), f.text.size(), pugi::parse_default, pugi::encoding_auto);
  if (!parsed) {
    throw SspError(f.label + ":" + std::to_string(f.lines.line_at(parsed.offset)) + ": " + parsed.description() +
                   " — expected well-formed XML");
  }
  if (count_nodes(f.doc, limits.max_xml_nodes) > limits.max_xml_nodes) {
    throw SspError(f.label + ": more than " + std::to_string(limits.max_xml_nodes) +
                   " XML elements and attributes — refused");
  }
}

std::optional<std::string> archive_path(const std::string& uri, std::string* why) {
  if (uri.empty()) {
    *why = "is empty";
    return std::nullopt;
  }
  const auto first_special = uri.find_first_of(":/?#");
  if (first_special != std::string::npos && uri[first_special] == ':') {
    *why = "has a URI scheme ('" + uri.substr(0, first_special) +
           ":') — only relative URIs inside the archive are supported";
    return std::nullopt;
  }
  if (uri.find_first_of("?#") != std::string::npos) {
    *why = "has a query or fragment ('?', '#') — references into other SSDs are not supported";
    return std::nullopt;
  }
  std::string decoded;
  for (std::size_t i = 0; i < uri.size(); ++i) {
    if (uri[i] == '%') {
      unsigned value = 0;
      const auto r = i + 2 < uri.size() ? std::from_chars(uri.data() + i + 1, uri.data() + i + 3, value, 16)
                                        : std::from_chars_result{nullptr, std::errc::invalid_argument};
      if (r.ec != std::errc() || r.ptr != uri.data() + i + 3) {
        *why = "has a malformed percent escape";
        return std::nullopt;
      }
      decoded += static_cast<char>(value);
      i += 2;
    } else {
      decoded += uri[i];
    }
  }
  if (decoded.front() == '/' || decoded.find('\\') != std::string::npos || decoded.find('\0') != std::string::npos) {
    *why = "is absolute or has a backslash or NUL — it must stay inside the archive";
    return std::nullopt;
  }
  std::string out;
  std::size_t pos = 0;
  while (pos <= decoded.size()) {
    const std::size_t end = std::min(decoded.find('/', pos), decoded.size());
    const std::string part = decoded.substr(pos, end - pos);
    if (part == "..") {
      *why = "has a '..' component — it must stay inside the archive";
      return std::nullopt;
    }
    if (!part.empty() && part != ".") out += (out.empty() ? "" : "/") + part;
    pos = end + 1;
  }
  if (out.empty()) {
    *why = "names no file";
    return std::nullopt;
  }
  return out;
}

bool plain_file_inside(const fs::path& root, const fs::path& p) {
  std::error_code ec;
  const auto st = fs::symlink_status(p, ec);
  if (ec || !fs::is_regular_file(st)) return false;
  const auto canon = fs::weakly_canonical(p, ec);
  const auto base = fs::weakly_canonical(root, ec);
  if (ec) return false;
  const auto rel = canon.lexically_relative(base);
  return !rel.empty() && *rel.begin() != "..";
}

const char* type_name(SspType t) {
  switch (t) {
    case SspType::kReal:
      return "Real";
    case SspType::kInteger:
      return "Integer";
    case SspType::kBoolean:
      return "Boolean";
    case SspType::kString:
      return "String";
    case SspType::kEnumeration:
      return "Enumeration";
    case SspType::kBinary:
      return "Binary";
    case SspType::kNone:
      break;
  }
  return "(none)";
}

SspType type_of(std::string_view element) {
  if (element == "Real") return SspType::kReal;
  if (element == "Integer") return SspType::kInteger;
  if (element == "Boolean") return SspType::kBoolean;
  if (element == "String") return SspType::kString;
  if (element == "Enumeration") return SspType::kEnumeration;
  if (element == "Binary") return SspType::kBinary;
  return SspType::kNone;
}

SspType type_of(const fmu::Variable& v) {
  const std::string& t = v.type_name;
  if (t == "Real" || t == "Float64" || t == "Float32") return SspType::kReal;
  if (t == "Integer" || t.starts_with("Int") || t.starts_with("UInt")) return SspType::kInteger;
  if (t == "Boolean") return SspType::kBoolean;
  if (t == "String") return SspType::kString;
  if (t == "Enumeration") return SspType::kEnumeration;
  if (t == "Binary") return SspType::kBinary;
  return SspType::kNone;
}

std::size_t not_utf8_at(std::string_view s) {
  std::uint32_t cp = 0;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_at(s, i, &cp);
    if (n == 0) return i + 1;
    i += n;
  }
  return 0;
}

// `s` as a double-quoted YAML scalar that holds it and nothing else, in a
// value and in a `#` comment alike (issue 44: a name with a line break in a
// comment wrote keys of its own). '"' and '\' are escaped; so are the C0
// and C1 control characters (LF, CR and NEL among them), DEL, U+2028 and
// U+2029 (line breaks to a YAML 1.1 reader), U+FEFF and U+FFFE/U+FFFF, as
// \xNN or \uNNNN, which yaml-cpp reads back as the same UTF-8 (not \N: its
// 0.7 reads that as a lone byte). A byte that is not UTF-8 becomes \xNN:
// it keeps its place but reads back as U+00NN, so what must read back the
// same is checked to be UTF-8 first (check_utf8, write()).
std::string yaml_quote(std::string_view s) {
  std::string out = "\"";
  char buf[16];
  for (std::size_t i = 0; i < s.size();) {
    std::uint32_t cp = 0;
    const std::size_t n = utf8_at(s, i, &cp);
    if (n == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(s[i])));
      out += buf;
      ++i;
      continue;
    }
    if (cp == '"' || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else if (cp == 0x2028 || cp == 0x2029 || cp == 0xfeff || cp == 0xfffe || cp == 0xffff) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out + "\"";
}

std::string number_text(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // the shortest text that reads back to v
  return std::string(buf, r.ptr);
}

std::string block_name(const std::string& component) {
  std::string out;
  for (const char c : component) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    out += ok ? c : '_';
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9') || out[0] == '-') out = "c_" + out;
  return out;
}

}  // namespace ssp_detail

}  // namespace rtcosim::config
