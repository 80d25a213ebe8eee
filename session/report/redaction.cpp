#include "session/report/redaction.hpp"

#include <algorithm>
#include <bitset>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <unordered_set>

namespace rtcosim::session {

namespace {

// A diagnostic as a client of the socket sees it: where, and the message
// with every quoted part replaced by '…' unless it is a plain word (letters,
// digits, '_', '.', '-', at most 64) of which the file holds no piece of 8
// characters (nor the whole), i.e. one of the loader's own words
// ('wires', a block type, a parameter the file lacks). So a reload of a
// file that is not a task graph never hands its content out through the
// socket, not even a key-like line (a web token file's token was echoed
// whole, being a plain word). The full text goes to the daemon's log. An
// apostrophe between two letters ("binary's" in an FMU's message) is not a
// quote.
std::size_t find_quote(const std::string& s, std::size_t from) {
  const auto letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
  for (std::size_t q = s.find('\'', from); q != std::string::npos; q = s.find('\'', q + 1)) {
    if (!(q > 0 && q + 1 < s.size() && letter(s[q - 1]) && letter(s[q + 1]))) return q;
  }
  return std::string::npos;
}

// A message cut into quoted parts, tokens (runs without blanks, quotes or
// brackets) and what lies between them.
struct Segment {
  enum Kind { kBetween, kQuoted, kToken } kind;
  std::string text;
  bool blank = false;
};

std::vector<Segment> segments_of(const std::string& message) {
  std::vector<Segment> out;
  const auto unquoted = [&](const std::string& text) {
    const auto separator = [](char c) {
      return std::isspace(static_cast<unsigned char>(c)) != 0 || std::strchr("\"(),;[]{}<>", c) != nullptr;
    };
    for (std::size_t i = 0; i < text.size();) {
      std::size_t j = i;
      const bool sep = separator(text[i]);
      while (j < text.size() && separator(text[j]) == sep) ++j;
      out.push_back({sep ? Segment::kBetween : Segment::kToken, text.substr(i, j - i)});
      i = j;
    }
  };
  for (std::size_t i = 0; i < message.size();) {
    const std::size_t open = find_quote(message, i);
    const std::size_t close = open == std::string::npos ? open : find_quote(message, open + 1);
    if (close == std::string::npos) {
      unquoted(message.substr(i));
      break;
    }
    unquoted(message.substr(i, open - i));
    out.push_back({Segment::kQuoted, message.substr(open + 1, close - open - 1)});
    i = close + 1;
  }
  return out;
}

// Pieces of kPiece characters: what of a message the file holds anywhere,
// however the message shows it. A value cut short ("abc...") or joined to
// a unit (e.g. "7391846205ms") is never found whole in the file (issue 44:
// a 48-character token came back as its first 37, the redaction looking
// for it whole). The file is read once, each of its windows looked up
// among the messages' few thousand, so a 4 MiB file costs one pass on the
// reload's worker.
constexpr std::size_t kPiece = 8;

std::uint64_t piece_at(const std::string& s, std::size_t i) {
  std::uint64_t w = 0;
  std::memcpy(&w, s.data() + i, kPiece);
  return w;
}

// Unquoted, the loader writes its own words, paths it resolved, and values
// only as numbers (a duration without a unit: "= 7391846205 has no unit");
// a token is looked for in the file when it could be data (a digit, a
// capital), not when it is a lower-case word ('co_simulation' in an FMU's
// message is the loader's word even where the graph uses it too).
bool data_like(const std::string& token) {
  return token.size() >= kPiece && std::any_of(token.begin(), token.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) != 0 || std::isupper(static_cast<unsigned char>(c)) != 0;
         });
}

}  // namespace

std::vector<std::string> redacted(const std::vector<config::Diagnostic>& diagnostics, const std::string& file_text) {
  const auto plain = [](const std::string& q) {
    return !q.empty() && q.size() <= 64 &&
           q.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
               std::string::npos &&
           !(q.size() >= 3 && q.compare(q.size() - 3, 3, "...") == 0);  // a cut value
  };
  std::vector<std::vector<Segment>> messages;
  std::unordered_set<std::uint64_t> wanted, found;
  std::bitset<1u << 16> maybe;  // a first filter: most of the file's windows are no message's
  const auto bucket = [](std::uint64_t w) { return static_cast<std::size_t>((w * 0x9E3779B97F4A7C15ull) >> 48); };
  for (const auto& d : diagnostics) {
    messages.push_back(segments_of(d.message));
    for (auto& seg : messages.back()) {
      if (seg.kind == Segment::kQuoted) seg.blank = !plain(seg.text) || file_text.find(seg.text) != std::string::npos;
      const bool look = seg.kind == Segment::kQuoted ? !seg.blank : seg.kind == Segment::kToken && data_like(seg.text);
      for (std::size_t i = 0; look && i + kPiece <= seg.text.size(); ++i) {
        wanted.insert(piece_at(seg.text, i));
        maybe.set(bucket(piece_at(seg.text, i)));
      }
    }
  }
  for (std::size_t i = 0; !wanted.empty() && i + kPiece <= file_text.size(); ++i) {
    const std::uint64_t w = piece_at(file_text, i);
    if (maybe.test(bucket(w)) && wanted.count(w) != 0) found.insert(w);
  }
  std::vector<std::string> out;
  for (std::size_t k = 0; k < diagnostics.size(); ++k) {
    std::string message;
    for (auto& seg : messages[k]) {
      const bool look = seg.kind == Segment::kQuoted || (seg.kind == Segment::kToken && data_like(seg.text));
      for (std::size_t i = 0; look && !seg.blank && i + kPiece <= seg.text.size(); ++i) {
        seg.blank = found.count(piece_at(seg.text, i)) != 0;
      }
      if (seg.kind == Segment::kQuoted) {
        message += "'" + (seg.blank ? std::string("…") : seg.text) + "'";
      } else {
        message += seg.blank ? std::string("…") : seg.text;
      }
    }
    config::Diagnostic copy = diagnostics[k];
    copy.message = message;
    out.push_back(copy.str());
  }
  return out;
}

}  // namespace rtcosim::session
