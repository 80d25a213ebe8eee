#include "base/json.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace rtcosim::base {

namespace {

// The length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), 0 if there is none.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    const std::size_t n = utf8_length(s, i);
    if (n == 0) {
      // A byte that is not UTF-8 (a client's junk echoed in an error)
      // becomes U+FFFD, so that every reply stays valid JSON.
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    ++i;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

namespace {

struct Parser {
  std::string_view s;
  std::size_t i = 0;
  std::string error;

  void skip() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool fail(const std::string& what) {
    if (error.empty()) error = what + " at offset " + std::to_string(i);
    return false;
  }
  bool string(std::string& out) {
    if (i >= s.size() || s[i] != '"') return fail("expected a string");
    ++i;
    while (i < s.size() && s[i] != '"') {
      char c = s[i++];
      if (c == '\\') {
        if (i >= s.size()) return fail("unterminated escape");
        const char e = s[i++];
        switch (e) {
          case '"': case '\\': case '/': c = e; break;
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case 'b': c = '\b'; break;
          case 'f': c = '\f'; break;
          case 'u': {
            if (i + 4 > s.size()) return fail("short \\u escape");
            unsigned v = 0;
            for (int k = 0; k < 4; ++k) {
              const char h = s[i++];
              v = v * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0'
                                                 : (std::tolower(h) >= 'a' && std::tolower(h) <= 'f') ? std::tolower(h) - 'a' + 10
                                                                                                       : 99);
            }
            if (v > 0xffff) return fail("bad \\u escape");
            if (v >= 0x80) return fail("non-ASCII \\u escape");
            c = static_cast<char>(v);
            break;
          }
          default: return fail("unknown escape");
        }
      } else if (static_cast<unsigned char>(c) < 0x20) {
        return fail("control character in a string");
      }
      out += c;
    }
    if (i >= s.size()) return fail("unterminated string");
    ++i;
    return true;
  }
  bool scalar(std::string& out) {
    if (i < s.size() && s[i] == '"') return string(out);
    const std::size_t start = i;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '-' || s[i] == '+' || s[i] == '.')) ++i;
    out = std::string(s.substr(start, i - start));
    if (out == "null") {
      out.clear();
      return true;
    }
    if (out == "true" || out == "false") return true;
    if (out.empty()) return fail(i < s.size() && (s[i] == '{' || s[i] == '[') ? "nested values are not accepted" : "expected a value");
    char* end = nullptr;
    std::strtod(out.c_str(), &end);
    if (end != out.c_str() + out.size()) return fail("'" + out + "' is not a number");
    return true;
  }
};

}  // namespace

std::optional<std::map<std::string, std::string>> parse_flat_object(std::string_view text, std::string* error) {
  Parser p;
  p.s = text;
  std::map<std::string, std::string> out;
  auto fail = [&]() -> std::optional<std::map<std::string, std::string>> {
    if (error) *error = p.error;
    return std::nullopt;
  };
  p.skip();
  if (p.i >= text.size() || text[p.i] != '{') {
    p.fail("expected a JSON object '{...}'");
    return fail();
  }
  ++p.i;
  p.skip();
  if (p.i < text.size() && text[p.i] == '}') {
    ++p.i;
  } else {
    for (;;) {
      p.skip();
      std::string key, value;
      if (!p.string(key)) return fail();
      p.skip();
      if (p.i >= text.size() || text[p.i] != ':') {
        p.fail("expected ':'");
        return fail();
      }
      ++p.i;
      p.skip();
      if (!p.scalar(value)) return fail();
      out[key] = value;
      p.skip();
      if (p.i < text.size() && text[p.i] == ',') {
        ++p.i;
        continue;
      }
      if (p.i < text.size() && text[p.i] == '}') {
        ++p.i;
        break;
      }
      p.fail("expected ',' or '}'");
      return fail();
    }
  }
  p.skip();
  if (p.i != text.size()) {
    p.fail("unexpected text after the object");
    return fail();
  }
  return out;
}

}  // namespace rtcosim::base
