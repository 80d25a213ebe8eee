#include "base/json.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace rtcosim::base {

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
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
