// SSP 1.0 import (docs/ssp.md): SystemStructure.ssd, its FMUs and
// parameter sets -> a task graph of fmu blocks.
#include "rt_config/ssp_import.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <system_error>
#include <unordered_map>

#include <pugixml.hpp>

#include "base/duration.hpp"
#include "base/text.hpp"
#include "tasks/fmu/fmu_archive.hpp"
#include "tasks/fmu/model_description.hpp"

namespace rtcosim::config {

namespace fs = std::filesystem;
namespace fmu = tasks::fmu;

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

namespace {

// SIGTERM and SIGINT during an import. The default action would end the
// process at once and leave the unpacked archive in $TMPDIR. While an
// import runs, a signal whose action is the default is only noted here; the
// importer looks between its steps (Importer::check_stop) and unwinds, its
// destructors remove what it unpacked, and import_ssp then raises the
// signal again under the default action. A process that handles or ignores
// the signal keeps its own way of doing so.
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void note_stop_signal(int sig) { g_stop_signal = sig; }

struct Interrupted {};  // not a std::exception: nothing on the way may take it for an error

class StopSignals {
 public:
  StopSignals() {
    const std::lock_guard lock(mutex_);
    if (users_++ > 0) return;  // imports in several threads share one installation
    g_stop_signal = 0;
    for (std::size_t i = 0; i < kSignals.size(); ++i) {
      struct sigaction old {};
      installed_[i] = false;
      if (sigaction(kSignals[i], nullptr, &old) != 0) continue;
      if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) continue;
      struct sigaction note {};
      note.sa_handler = note_stop_signal;
      sigemptyset(&note.sa_mask);
      note.sa_flags = SA_RESTART;  // the unpacking's reads and writes go on undisturbed
      installed_[i] = sigaction(kSignals[i], &note, nullptr) == 0;
    }
  }
  ~StopSignals() {
    const std::lock_guard lock(mutex_);
    if (--users_ > 0) return;
    for (std::size_t i = 0; i < kSignals.size(); ++i) {
      if (!installed_[i]) continue;
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      sigaction(kSignals[i], &dfl, nullptr);
    }
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  static constexpr std::array<int, 2> kSignals = {SIGTERM, SIGINT};
  static inline std::mutex mutex_;
  static inline int users_ = 0;
  static inline std::array<bool, 2> installed_ = {false, false};
};

// The local name of an element or attribute: "ssd:System" -> "System".
// Prefixes are whatever the file declares; SSP names are unique without
// them.
std::string_view local(const char* name) {
  std::string_view s(name);
  const auto colon = s.find(':');
  return colon == std::string_view::npos ? s : s.substr(colon + 1);
}

// One XML file of the archive, parsed, with its lines for messages.
struct XmlFile {
  std::string label;  // "loop.ssp/SystemStructure.ssd"
  std::string text;
  LineIndex lines;  // of `text`
  pugi::xml_document doc;

  [[nodiscard]] std::size_t line(const pugi::xml_node& n) const { return lines.line_at(n.offset_debug()); }
  [[nodiscard]] std::string at(const pugi::xml_node& n) const { return label + ":" + std::to_string(line(n)); }
  [[noreturn]] void fail(const pugi::xml_node& n, const std::string& message) const {
    throw SspError(at(n) + ": " + message);
  }
};

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

// A relative URI of the SSD (a component's or a parameter set's source)
// as a path inside the unpacked archive: no scheme, no authority, no
// query or fragment, no absolute path, no '..', percent-decoded.
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

// A path in the unpacked archive that is a plain file under `root`: the
// unpacking refused symbolic links already; this holds the line anyway.
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

enum class SspType { kReal, kInteger, kBoolean, kString, kEnumeration, kBinary, kNone };

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

// The SSP type an FMU variable has (FMI 2.0 and 3.0 type names).
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

// A unit of <ssd:Units>: SI base-unit exponents, factor and offset.
struct UnitDef {
  std::array<int, 8> exponents{};  // kg m s A K mol cd rad
  double factor = 1.0, offset = 0.0;
  bool operator==(const UnitDef&) const = default;
};

struct Connector {
  std::string name;
  std::string kind;  // input, output, parameter, calculatedParameter, inout
  SspType type = SspType::kNone;
  std::string unit;
  std::size_t line = 0;
};

struct Component {
  std::string name;       // as in the SSD
  std::string block;      // the block's (and task's) name in the graph
  std::string source;     // path inside the archive
  std::string fmu_file;   // the file written (absolute)
  std::string interface;  // "", "model_exchange", "co_simulation"
  std::size_t line = 0;
  std::shared_ptr<const fmu::ModelDescription> md;
  // md's variables by name (the first of a name, as ModelDescription::find):
  // found by a look-up, not a search per connector and connection.
  std::shared_ptr<const std::unordered_map<std::string_view, const fmu::Variable*>> variables;
  std::vector<Connector> connectors;
  std::map<std::string, std::size_t, std::less<>> connector_index;  // into connectors
  std::vector<std::pair<std::string, double>> start;                // in the order first set
  std::map<std::string, std::size_t> start_index;

  [[nodiscard]] const Connector* connector(const std::string& n) const {
    const auto it = connector_index.find(n);
    return it == connector_index.end() ? nullptr : &connectors[it->second];
  }
  [[nodiscard]] const fmu::Variable* variable(const std::string& n) const {
    const auto it = variables->find(n);
    return it == variables->end() ? nullptr : it->second;
  }
};

struct Wire {
  std::string from_block, from_port, to_block, to_port;
  std::size_t line = 0;
};

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

// The 1-based byte at which `s` stops being UTF-8; 0 when it is UTF-8.
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

// A block name from a component name: letters, digits, '_' and '-'; any
// other character becomes '_'.
std::string block_name(const std::string& component) {
  std::string out;
  for (const char c : component) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    out += ok ? c : '_';
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9') || out[0] == '-') out = "c_" + out;
  return out;
}

class Importer {
 public:
  Importer(const std::string& ssp, const SspImportOptions& options) : ssp_(ssp), opt_(options) {}

  SspImport run() {
    std::string why;
    if (!base::parse_duration(opt_.period, &why) || *base::parse_duration(opt_.period) <= 0.0)
      throw SspError("--period '" + opt_.period + "': " + (why.empty() ? "must be positive" : why));
    unpack();
    check_stop();
    ssd_.label = ssp_ + "/SystemStructure.ssd";
    read_xml(ssd_, fs::path(dir_) / "SystemStructure.ssd", opt_.limits);
    check_stop();
    const auto root = ssd_.doc.document_element();
    if (local(root.name()) != "SystemStructureDescription")
      ssd_.fail(root,
                "the root element is <" + std::string(root.name()) + "> — expected <ssd:SystemStructureDescription>");
    const std::string version = root.attribute("version").value();
    if (!version.starts_with("1.")) {
      ssd_.fail(root, "SSP version '" + version + "' is not supported — rtcosim imports SSP 1.0 (version=\"1.0\")");
    }
    name_ = root.attribute("name").value();
    if (!name_.empty()) check_name(ssd_, root, "the SSD", name_);
    pugi::xml_node system;
    for (auto c : root.children()) {
      const auto n = local(c.name());
      if (n == "System") {
        if (system) ssd_.fail(c, "a second <System> — an SSD has one root system");
        system = c;
      } else if (n == "Units") {
        read_units(c);
      } else if (n == "DefaultExperiment") {
        read_experiment(c);
      }
    }
    if (!system) ssd_.fail(root, "no <ssd:System> — the SSD describes no system");
    if (name_.empty()) {
      name_ = system.attribute("name").value();
      if (!name_.empty()) check_name(ssd_, system, "the system", name_);
    }
    read_system(system);
    return write();
  }

 private:
  // Between steps: a SIGTERM or SIGINT noted meanwhile stops the import
  // (StopSignals).
  static void check_stop() {
    if (g_stop_signal != 0) throw Interrupted{};
  }

  void unpack() {
    try {
      archive_ = std::make_unique<fmu::ExtractedArchive>(ssp_);
    } catch (const fmu::FmuError& e) {
      // The archive helper speaks of FMUs; the rules are the same for an SSP.
      std::string m = e.what();
      for (const auto& [from, to] :
           std::vector<std::pair<std::string, std::string>>{{"as an FMU", "as an SSP"},
                                                            {"the FMU's directory", "the SSP's directory"},
                                                            {"an FMU may hold", "an SSP may hold"}}) {
        if (const auto p = m.find(from); p != std::string::npos) m.replace(p, from.size(), to);
      }
      throw SspError(m);
    }
    dir_ = archive_->directory();
    if (!plain_file_inside(dir_, fs::path(dir_) / "SystemStructure.ssd"))
      throw SspError(ssp_ + ": the archive has no SystemStructure.ssd at its root — not an SSP");
  }

  void read_units(const pugi::xml_node& units) {
    for (auto u : units.children()) {
      if (local(u.name()) != "Unit") continue;
      UnitDef d;
      for (auto b : u.children()) {
        if (local(b.name()) != "BaseUnit") continue;
        const char* keys[] = {"kg", "m", "s", "A", "K", "mol", "cd", "rad"};
        for (std::size_t i = 0; i < 8; ++i) d.exponents[i] = b.attribute(keys[i]).as_int(0);
        d.factor = b.attribute("factor").as_double(1.0);
        d.offset = b.attribute("offset").as_double(0.0);
      }
      units_[u.attribute("name").value()] = d;
    }
  }

  void read_experiment(const pugi::xml_node& e) {
    const double start = e.attribute("startTime").as_double(0.0);
    if (e.attribute("stopTime")) {
      const double stop = e.attribute("stopTime").as_double(0.0);
      if (!std::isfinite(stop) || !std::isfinite(start) || stop <= start)
        ssd_.fail(e, "DefaultExperiment stopTime must be a number after startTime");
      duration_ = stop - start;
    }
    if (start != 0.0) {
      warnings_.push_back(ssd_.at(e) + ": DefaultExperiment startTime " + number_text(start) +
                          " s ignored — rtcosim's simulation time starts at 0 (duration: stopTime - startTime)");
    }
  }

  // Units are the same when their names are, or when <ssd:Units> defines
  // both with the same base units, factor and offset.
  [[nodiscard]] bool same_unit(const std::string& a, const std::string& b) const {
    if (a.empty() || b.empty() || a == b) return true;
    const auto ia = units_.find(a), ib = units_.find(b);
    return ia != units_.end() && ib != units_.end() && ia->second == ib->second;
  }

  void check_name(const XmlFile& f, const pugi::xml_node& n, const std::string& what, const std::string& name) {
    if (name.empty()) f.fail(n, what + " has no name");
    if (name.size() > opt_.limits.max_name_bytes) {
      f.fail(n, what + " name of " + std::to_string(name.size()) + " bytes — more than the " +
                    std::to_string(opt_.limits.max_name_bytes) + " allowed");
    }
    check_utf8(f, n, what + " name", name);
  }

  // What reaches the graph must read back as it was: the graph is UTF-8
  // text, and yaml_quote can keep a stray byte in its place but not make
  // it read back the same.
  static void check_utf8(const XmlFile& f, const pugi::xml_node& n, const std::string& what, std::string_view text) {
    if (const std::size_t at = not_utf8_at(text))
      f.fail(n, what + " is not valid UTF-8 (byte " + std::to_string(at) + ") — refused");
  }

  std::vector<Connector> read_connectors(const pugi::xml_node& connectors, const std::string& owner) {
    std::vector<Connector> out;
    std::set<std::string> seen;
    for (auto c : connectors.children()) {
      if (local(c.name()) != "Connector") continue;
      check_stop();
      if (++connector_count_ > opt_.limits.max_connectors) {
        ssd_.fail(c, "more than " + std::to_string(opt_.limits.max_connectors) + " connectors — refused");
      }
      Connector k;
      k.name = c.attribute("name").value();
      check_name(ssd_, c, "a connector of " + owner, k.name);
      if (!seen.insert(k.name).second) ssd_.fail(c, owner + " declares connector '" + k.name + "' twice");
      k.kind = c.attribute("kind").value();
      k.line = ssd_.line(c);
      static const std::set<std::string> kinds = {"input", "output", "parameter", "calculatedParameter", "inout"};
      if (!kinds.count(k.kind)) {
        ssd_.fail(c, "connector '" + k.name + "' of " + owner + " has kind '" + k.kind +
                         "' — expected input, output, parameter, calculatedParameter or inout");
      }
      for (auto t : c.children()) {
        const SspType type = type_of(local(t.name()));
        if (type == SspType::kNone) continue;  // geometry, annotations
        k.type = type;
        k.unit = t.attribute("unit").value();
      }
      out.push_back(std::move(k));
    }
    return out;
  }

  void read_system(const pugi::xml_node& system) {
    std::vector<pugi::xml_node> system_bindings, connections;
    for (auto c : system.children()) {
      const auto n = local(c.name());
      if (n == "Connectors") {
        system_connectors_ = read_connectors(c, "the system");
        system_connector_index_.clear();
        for (std::size_t i = 0; i < system_connectors_.size(); ++i)
          system_connector_index_.emplace(system_connectors_[i].name, i);
      } else if (n == "ParameterBindings") {
        for (auto b : c.children())
          if (local(b.name()) == "ParameterBinding") system_bindings.push_back(b);
      } else if (n == "Elements") {
        for (auto e : c.children()) read_element(e);
      } else if (n == "Connections") {
        for (auto k : c.children()) {
          if (local(k.name()) != "Connection") continue;
          if (connections.size() >= opt_.limits.max_connections) {
            ssd_.fail(k, "more than " + std::to_string(opt_.limits.max_connections) + " connections — refused");
          }
          connections.push_back(k);
        }
      } else if (n == "SignalDictionaries") {
        if (c.first_child())
          ssd_.fail(c, "signal dictionaries (<ssd:SignalDictionaries>) are not supported by rtcosim's import");
      }
    }
    if (components_.empty())
      ssd_.fail(system, "system '" + std::string(system.attribute("name").value()) + "' has no components");
    // Parameters: the components' own bindings first, the system's after
    // (a higher level takes precedence; a later binding over an earlier).
    for (auto& [comp, binding] : component_bindings_) apply_binding(binding, comp);
    for (const auto& b : system_bindings) apply_binding(b, std::nullopt);
    for (const auto& k : connections) {
      check_stop();
      read_connection(k);
    }
  }

  void read_element(const pugi::xml_node& e) {
    const auto n = local(e.name());
    if (n == "System") {
      ssd_.fail(e, "nested system '" + std::string(e.attribute("name").value()) +
                       "' — rtcosim imports one flat system of components (nested systems are not supported)");
    }
    if (n == "SignalDictionaryReference") {
      ssd_.fail(e, "signal dictionary reference '" + std::string(e.attribute("name").value()) +
                       "' — signal dictionaries are not supported by rtcosim's import");
    }
    if (n != "Component") return;
    if (components_.size() >= opt_.limits.max_components) {
      ssd_.fail(e, "more than " + std::to_string(opt_.limits.max_components) + " components — refused");
    }
    check_stop();  // each component unpacks its FMU
    Component c;
    c.name = e.attribute("name").value();
    check_name(ssd_, e, "a component", c.name);
    c.line = ssd_.line(e);
    if (component_index_.count(c.name)) ssd_.fail(e, "a second component is named '" + c.name + "'");
    const std::string type =
        e.attribute("type") ? e.attribute("type").value() : std::string("application/x-fmu-sharedlibrary");
    if (type != "application/x-fmu-sharedlibrary") {
      ssd_.fail(e,
                "component '" + c.name + "' has type '" + type +
                    "' — only FMUs (application/x-fmu-sharedlibrary) are supported; referenced SSDs and SSPs are not");
    }
    const std::string impl = e.attribute("implementation").value();
    if (impl == "ModelExchange") {
      c.interface = "model_exchange";
    } else if (impl == "CoSimulation") {
      c.interface = "co_simulation";
    } else if (impl == "ScheduledExecution") {
      ssd_.fail(e, "component '" + c.name + "' asks for implementation ScheduledExecution — not supported by rtcosim");
    } else if (!impl.empty() && impl != "any") {
      ssd_.fail(e, "component '" + c.name + "' has implementation '" + impl +
                       "' — expected any, ModelExchange or CoSimulation");
    }
    const std::string source = e.attribute("source").value();
    check_name(ssd_, e, "component '" + c.name + "' source", source);
    std::string why;
    const auto path = archive_path(source, &why);
    if (!path) ssd_.fail(e, "component '" + c.name + "': source '" + source + "' " + why);
    c.source = *path;
    c.md = description_of(e, c);
    c.variables = variable_indexes_.at(c.source);
    for (auto k : e.children()) {
      const auto kn = local(k.name());
      if (kn == "Connectors") {
        c.connectors = read_connectors(k, "component '" + c.name + "'");
      } else if (kn == "ParameterBindings") {
        for (auto b : k.children())
          if (local(b.name()) == "ParameterBinding") component_bindings_.emplace_back(components_.size(), b);
      }
    }
    for (std::size_t i = 0; i < c.connectors.size(); ++i) c.connector_index.emplace(c.connectors[i].name, i);
    for (const auto& k : c.connectors) check_connector(c, k);
    // The block's (and task's) name: unique, from the component's.
    std::string b = block_name(c.name);
    for (int i = 2; block_names_.count(b); ++i) b = block_name(c.name) + "_" + std::to_string(i);
    block_names_.insert(b);
    c.block = b;
    component_index_.emplace(c.name, components_.size());
    components_.push_back(std::move(c));
  }

  // The FMU's modelDescription.xml (unpacked with the same limits and
  // refusals as any FMU; nothing of it is loaded or run).
  std::shared_ptr<const fmu::ModelDescription> description_of(const pugi::xml_node& e, const Component& c) {
    if (auto it = descriptions_.find(c.source); it != descriptions_.end()) return it->second;
    const fs::path p = fs::path(dir_) / c.source;
    if (!plain_file_inside(dir_, p)) {
      ssd_.fail(e, "component '" + c.name + "': source '" + c.source + "' is not a file in the archive");
    }
    try {
      fmu::ExtractedArchive fmu_files(p.string());
      XmlFile md_file;
      md_file.label = ssp_ + "/" + c.source + "/modelDescription.xml";
      const fs::path md_path = fs::path(fmu_files.directory()) / "modelDescription.xml";
      std::error_code ec;
      if (!fs::is_regular_file(fs::symlink_status(md_path, ec))) {
        ssd_.fail(e,
                  "component '" + c.name + "': " + c.source + " has no modelDescription.xml at its root — not an FMU");
      }
      const auto size = fs::file_size(md_path, ec);
      if (ec || size > opt_.limits.max_xml_bytes) {
        ssd_.fail(e, "component '" + c.name + "': " + c.source + "'s modelDescription.xml is larger than " +
                         std::to_string(opt_.limits.max_xml_bytes) + " bytes — refused");
      }
      std::ifstream in(md_path, std::ios::binary);
      const std::string xml{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      auto md = std::make_shared<const fmu::ModelDescription>(fmu::parse_model_description(xml, ssp_ + "/" + c.source));
      auto index = std::make_shared<std::unordered_map<std::string_view, const fmu::Variable*>>();
      for (const auto& v : md->variables) index->emplace(v.name, &v);
      descriptions_[c.source] = md;
      variable_indexes_[c.source] = std::move(index);
      return md;
    } catch (const fmu::FmuError& err) {
      ssd_.fail(e, "component '" + c.name + "': " + err.what());
    }
  }

  [[noreturn]] void no_variable(const XmlFile& f, const pugi::xml_node& n, const Component& c, const std::string& what,
                                const std::string& var) const {
    std::vector<std::string> names;
    for (const auto& v : c.md->variables) names.push_back(v.name);
    std::string m = what + " names '" + var + "', which " + c.source + " (component '" + c.name + "') does not declare";
    if (const auto guess = base::closest_match(var, names); !guess.empty()) m += " (did you mean '" + guess + "'?)";
    f.fail(n, m);
  }

  static std::string kind_of(const fmu::Variable& v) {
    switch (v.causality) {
      case fmu::Causality::kInput:
        return "input";
      case fmu::Causality::kOutput:
        return "output";
      case fmu::Causality::kParameter:
      case fmu::Causality::kStructuralParameter:
        return "parameter";
      case fmu::Causality::kCalculatedParameter:
        return "calculatedParameter";
      default:
        return fmu::causality_name(v.causality);
    }
  }

  // A component's connector against its FMU: the variable exists, kind
  // and causality agree, type and unit agree.
  void check_connector(const Component& c, const Connector& k) {
    const std::string at = ssd_.label + ":" + std::to_string(k.line) + ": ";
    const fmu::Variable* v = c.variable(k.name);
    if (!v) {
      std::vector<std::string> names;
      for (const auto& var : c.md->variables) names.push_back(var.name);
      std::string m = at + "connector '" + k.name + "' of component '" + c.name + "': " + c.source +
                      " has no variable of that name";
      if (const auto guess = base::closest_match(k.name, names); !guess.empty())
        m += " (did you mean '" + guess + "'?)";
      throw SspError(m);
    }
    if (k.kind == "inout") {
      throw SspError(at + "connector '" + k.name + "' of component '" + c.name +
                     "' has kind inout — FMU variables are inputs or outputs (inout is not supported)");
    }
    if (kind_of(*v) != k.kind) {
      throw SspError(at + "connector '" + k.name + "' of component '" + c.name + "' is declared " + k.kind + ", but " +
                     c.source + " declares '" + k.name + "' as " + fmu::causality_name(v->causality));
    }
    if (k.type != SspType::kNone && type_of(*v) != k.type) {
      throw SspError(at + "connector '" + k.name + "' of component '" + c.name + "' is declared " + type_name(k.type) +
                     ", but " + c.source + " declares '" + k.name + "' as " + v->type_name);
    }
    if (!same_unit(k.unit, v->unit)) {
      throw SspError(at + "connector '" + k.name + "' of component '" + c.name + "' has unit '" + k.unit + "', but " +
                     c.source + " gives '" + k.name + "' unit '" + v->unit + "'");
    }
  }

  // A connector of a component as the SSD declares it, or, when it does
  // not, as the FMU's variable of that name.
  Connector endpoint_connector(const Component& c, const std::string& name, const pugi::xml_node& k) const {
    if (const Connector* declared = c.connector(name)) {
      Connector out = *declared;
      if (out.type == SspType::kNone) out.type = type_of(*c.variable(name));
      if (out.unit.empty()) out.unit = c.variable(name)->unit;
      return out;
    }
    const fmu::Variable* v = c.variable(name);
    if (!v) no_variable(ssd_, k, c, "the connection", name);
    return Connector{name, kind_of(*v), type_of(*v), v->unit, ssd_.line(k)};
  }

  void read_connection(const pugi::xml_node& k) {
    for (auto t : k.children()) {
      const auto n = local(t.name());
      if (n.ends_with("Transformation")) {
        ssd_.fail(t, "connection transformations (<ssc:" + std::string(n) +
                         ">) are not supported — rtcosim's wires carry values unchanged");
      }
    }
    struct End {
      const Component* comp = nullptr;
      Connector conn;
      std::string text;  // "plant.x" or "system connector 'position'"
    };
    auto resolve = [&](const char* element_attr, const char* connector_attr) {
      End end;
      const std::string element = k.attribute(element_attr).value();
      const std::string connector = k.attribute(connector_attr).value();
      if (connector.empty()) ssd_.fail(k, std::string("the connection has no ") + connector_attr);
      // A connector the component does not declare is taken from its FMU
      // and written into the graph as named here.
      check_utf8(ssd_, k, std::string("the connection's ") + connector_attr, connector);
      if (!k.attribute(element_attr)) {
        const auto sc = system_connector_index_.find(connector);
        if (sc == system_connector_index_.end())
          ssd_.fail(k, "the connection names the system's connector '" + connector + "', which it does not declare");
        end.conn = system_connectors_[sc->second];
        end.text = "the system's connector '" + connector + "'";
        return end;
      }
      if (const auto it = component_index_.find(element); it != component_index_.end())
        end.comp = &components_[it->second];
      if (!end.comp) {
        std::vector<std::string> names;
        for (const auto& c : components_) names.push_back(c.name);
        std::string m = "the connection names element '" + element + "', which the system does not contain";
        if (const auto guess = base::closest_match(element, names); !guess.empty())
          m += " (did you mean '" + guess + "'?)";
        ssd_.fail(k, m);
      }
      end.conn = endpoint_connector(*end.comp, connector, k);
      end.text = element + "." + connector;
      return end;
    };
    End a = resolve("startElement", "startConnector");
    End b = resolve("endElement", "endConnector");
    // Data flows from an element's output (or a system's input) to an
    // element's input (or a system's output); start and end say nothing
    // about it.
    auto is_source = [](const End& e) { return e.comp ? e.conn.kind == "output" : e.conn.kind == "input"; };
    auto is_sink = [](const End& e) { return e.comp ? e.conn.kind == "input" : e.conn.kind == "output"; };
    for (const End* e : {&a, &b}) {
      if (e->conn.kind == "parameter" || e->conn.kind == "calculatedParameter") {
        ssd_.fail(k, "the connection ends at " + e->text + ", a " + e->conn.kind +
                         " — connections of parameters are not supported (give start values in a parameter set)");
      }
      if (e->conn.kind == "inout")
        ssd_.fail(k, "the connection ends at " + e->text + ", an inout connector — not supported");
    }
    if (!(is_source(a) && is_sink(b)) && !(is_source(b) && is_sink(a))) {
      ssd_.fail(k, "the connection joins " + a.text + " (" + a.conn.kind + ") and " + b.text + " (" + b.conn.kind +
                       ") — a connection goes from an output to an input");
    }
    const End& from = is_source(a) && is_sink(b) ? a : b;
    const End& to = &from == &a ? b : a;
    if (from.conn.type != SspType::kNone && to.conn.type != SspType::kNone && from.conn.type != to.conn.type) {
      ssd_.fail(k, "the connection from " + from.text + " (" + type_name(from.conn.type) + ") to " + to.text + " (" +
                       type_name(to.conn.type) + ") joins different types");
    }
    for (const End* e : {&from, &to}) {
      if (e->conn.type == SspType::kString || e->conn.type == SspType::kBinary) {
        ssd_.fail(k, "the connection carries " + std::string(type_name(e->conn.type)) + " (" + e->text +
                         ") — rtcosim's wires carry numbers (Real, Integer, Boolean, Enumeration)");
      }
    }
    if (!same_unit(from.conn.unit, to.conn.unit)) {
      ssd_.fail(k, "the connection from " + from.text + " (unit '" + from.conn.unit + "') to " + to.text + " (unit '" +
                       to.conn.unit + "') joins different units — rtcosim converts no units");
    }
    if (!from.comp) {
      ssd_.fail(k, "the connection is driven by the system's input connector '" + from.conn.name +
                       "' — rtcosim imports a closed system: nothing outside drives its inputs");
    }
    if (!to.comp) {  // a system output: recorded
      const std::string signal = from.comp->block + "." + from.conn.name;
      if (extra_record_set_.insert(signal).second) extra_records_.push_back(signal);
      system_outputs_.push_back("# system output " + yaml_quote(to.conn.name) + " = " + yaml_quote(signal));
      return;
    }
    const std::string key = to.comp->block + "." + to.conn.name;
    if (auto it = driven_.find(key); it != driven_.end()) {
      ssd_.fail(k, to.text + " is driven by a second connection (the first is at line " + std::to_string(it->second) +
                       ") — an input has one source");
    }
    driven_[key] = ssd_.line(k);
    wires_.push_back(Wire{from.comp->block, from.conn.name, to.comp->block, to.conn.name, ssd_.line(k)});
  }

  // One ParameterBinding: a parameter set from a file of the archive or
  // inline, applied to one component (`comp`) or to the system (names
  // "component.variable").
  void apply_binding(const pugi::xml_node& b, const std::optional<std::size_t>& comp_index) {
    if (++binding_count_ > opt_.limits.max_bindings) {
      ssd_.fail(b, "more than " + std::to_string(opt_.limits.max_bindings) + " parameter bindings — refused");
    }
    const std::string type = b.attribute("type") ? b.attribute("type").value() : "application/x-ssp-parameter-set";
    if (type != "application/x-ssp-parameter-set") {
      ssd_.fail(b, "parameter binding of type '" + type +
                       "' — only SSP parameter sets (application/x-ssp-parameter-set) are supported");
    }
    if (std::string(b.attribute("sourceBase").value()) == "component") {
      ssd_.fail(b, "parameter binding with sourceBase=\"component\" (a parameter set inside the FMU) — not supported");
    }
    pugi::xml_node inline_values;
    for (auto c : b.children()) {
      const auto n = local(c.name());
      if (n == "ParameterMapping") {
        ssd_.fail(c,
                  "parameter mappings (<ssd:ParameterMapping>, .ssm) are not supported — give the parameter set the "
                  "FMU's names");
      }
      if (n == "ParameterValues") inline_values = c;
    }
    const std::string prefix = b.attribute("prefix").value();
    check_utf8(ssd_, b, "the parameter binding's prefix", prefix);  // it begins the names written as start values
    const std::string source = b.attribute("source").value();
    if (!source.empty() && inline_values)
      ssd_.fail(b, "the parameter binding has both a source and inline ParameterValues");
    if (source.empty()) {
      if (!inline_values) ssd_.fail(b, "the parameter binding has neither a source nor ParameterValues");
      pugi::xml_node set;
      for (auto c : inline_values.children())
        if (local(c.name()) == "ParameterSet") set = c;
      if (!set) ssd_.fail(inline_values, "ParameterValues holds no <ssv:ParameterSet>");
      apply_set(ssd_, set, prefix, comp_index);
      return;
    }
    std::string why;
    const auto path = archive_path(source, &why);
    if (!path) ssd_.fail(b, "parameter binding source '" + source + "' " + why);
    if (!plain_file_inside(dir_, fs::path(dir_) / *path))
      ssd_.fail(b, "parameter binding source '" + source + "' is not a file in the archive");
    auto file = std::make_unique<XmlFile>();
    file->label = ssp_ + "/" + *path;
    read_xml(*file, fs::path(dir_) / *path, opt_.limits);
    const auto root = file->doc.document_element();
    if (local(root.name()) != "ParameterSet")
      file->fail(root, "the root element is <" + std::string(root.name()) + "> — expected <ssv:ParameterSet>");
    apply_set(*file, root, prefix, comp_index);
    parameter_files_.push_back(std::move(file));
  }

  void apply_set(const XmlFile& f, const pugi::xml_node& set, const std::string& prefix,
                 const std::optional<std::size_t>& comp_index) {
    for (auto group : set.children()) {
      if (local(group.name()) != "Parameters") continue;
      for (auto p : group.children()) {
        if (local(p.name()) != "Parameter") continue;
        check_stop();
        if (++parameter_count_ > opt_.limits.max_parameters) {
          f.fail(p, "more than " + std::to_string(opt_.limits.max_parameters) + " parameters — refused");
        }
        const std::string raw = p.attribute("name").value();
        check_name(f, p, "a parameter", raw);
        apply_parameter(f, p, prefix + raw, comp_index);
      }
    }
  }

  void apply_parameter(const XmlFile& f, const pugi::xml_node& p, const std::string& name,
                       const std::optional<std::size_t>& comp_index) {
    pugi::xml_node value_node;
    SspType type = SspType::kNone;
    for (auto c : p.children()) {
      const SspType t = type_of(local(c.name()));
      if (t != SspType::kNone) value_node = c, type = t;
    }
    if (!value_node) f.fail(p, "parameter '" + name + "' has no value (<ssv:Real>, <ssv:Integer>, <ssv:Boolean>, ...)");
    if (type == SspType::kString || type == SspType::kEnumeration || type == SspType::kBinary) {
      f.fail(value_node, "parameter '" + name + "' is " + type_name(type) +
                             " — rtcosim's start values are numbers (Real, Integer, Boolean)");
    }
    const std::string text = value_node.attribute("value").value();
    double value = 0.0;
    bool ok = false;
    if (type == SspType::kBoolean) {
      ok = text == "true" || text == "false" || text == "1" || text == "0";
      value = (text == "true" || text == "1") ? 1.0 : 0.0;
    } else if (type == SspType::kInteger) {
      std::int32_t i = 0;
      const auto r = std::from_chars(text.data(), text.data() + text.size(), i);
      ok = r.ec == std::errc() && r.ptr == text.data() + text.size();
      value = i;
    } else {
      const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
      ok = !text.empty() && r.ec == std::errc() && r.ptr == text.data() + text.size() && std::isfinite(value);
    }
    if (!ok) {
      f.fail(value_node, "parameter '" + name + "' has value '" + text + "' — expected " +
                             (type == SspType::kBoolean   ? "true or false"
                              : type == SspType::kInteger ? "a 32-bit integer"
                                                          : "a finite number"));
    }
    const std::string unit = value_node.attribute("unit").value();
    // Which component variables the name sets: the bound component's own
    // variable, or, for the system, "element.variable" for every element
    // whose name (with its dot) begins the name (SSP's punning applies
    // the value to each).
    std::vector<std::pair<std::size_t, std::string>> targets;
    if (comp_index) {
      targets.emplace_back(*comp_index, name);
    } else {
      // Looked up at each dot of the name, not compared with every
      // component; in the components' order, as before.
      for (std::size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
        const auto it = component_index_.find(std::string_view(name).substr(0, dot));
        if (it == component_index_.end() || dot + 1 == name.size()) continue;
        if (components_[it->second].variable(name.substr(dot + 1)))
          targets.emplace_back(it->second, name.substr(dot + 1));
      }
      std::sort(targets.begin(), targets.end());
      if (targets.empty()) {
        warnings_.push_back(f.at(p) + ": parameter '" + name +
                            "' names no variable of any component (\"component.variable\") — ignored");
        return;
      }
    }
    for (const auto& [index, var] : targets) {
      Component& c = components_[index];
      const fmu::Variable* v = c.variable(var);
      if (!v) no_variable(f, p, c, "parameter '" + name + "'", var);
      const bool settable = v->variability != fmu::Variability::kConstant &&
                            (v->causality == fmu::Causality::kParameter || v->causality == fmu::Causality::kInput ||
                             v->causality == fmu::Causality::kStructuralParameter || !v->start.empty()) &&
                            v->causality != fmu::Causality::kCalculatedParameter &&
                            v->causality != fmu::Causality::kIndependent;
      if (!settable) {
        f.fail(p, "parameter '" + name + "' sets '" + var + "' of component '" + c.name + "', a " +
                      fmu::variability_name(v->variability) + " " + fmu::causality_name(v->causality) +
                      " that takes no start value");
      }
      if (type_of(*v) != type) {
        f.fail(value_node, "parameter '" + name + "' is " + type_name(type) + ", but " + c.source + " declares '" +
                               var + "' as " + v->type_name);
      }
      if (!same_unit(unit, v->unit)) {
        f.fail(value_node, "parameter '" + name + "' has unit '" + unit + "', but " + c.source + " gives '" + var +
                               "' unit '" + v->unit + "' — rtcosim converts no units");
      }
      if (auto it = c.start_index.find(var); it != c.start_index.end()) {
        c.start[it->second].second = value;
      } else {
        c.start_index[var] = c.start.size();
        c.start.emplace_back(var, value);
      }
    }
  }

  // Each FMU once into fmu_dir, under its own file name (a suffix when two
  // sources share one).
  void write_fmus(SspImport& out) {
    std::error_code ec;
    fs::create_directories(opt_.fmu_dir, ec);
    if (ec) throw SspError(opt_.fmu_dir + ": cannot create the directory for the FMUs: " + ec.message());
    std::map<std::string, std::string> written;  // source -> file
    std::set<std::string> used;
    for (auto& c : components_) {
      check_stop();
      if (auto it = written.find(c.source); it != written.end()) {
        c.fmu_file = it->second;
        continue;
      }
      const fs::path src(c.source);
      std::string stem = src.stem().string(), ext = src.extension().string();
      if (ext.empty()) ext = ".fmu";
      std::string file = stem + ext;
      for (int n = 2; used.count(file); ++n) file = stem + "_" + std::to_string(n) + ext;
      used.insert(file);
      const fs::path target = fs::path(opt_.fmu_dir) / file;
      const fs::path tmp = fs::path(opt_.fmu_dir) / ("." + file + ".partial");
      fs::remove(tmp, ec);
      if (!fs::copy_file(fs::path(dir_) / c.source, tmp, fs::copy_options::overwrite_existing, ec) || ec) {
        throw SspError(target.string() + ": cannot write: " + ec.message());
      }
      fs::rename(tmp, target, ec);
      if (ec) throw SspError(target.string() + ": cannot write: " + ec.message());
      c.fmu_file = target.string();
      written[c.source] = c.fmu_file;
      out.fmus.push_back(c.fmu_file);
    }
  }

  SspImport write() {
    SspImport out;
    write_fmus(out);
    const fs::path graph_dir = opt_.graph_dir.empty() ? fs::current_path() : fs::absolute(opt_.graph_dir);
    std::ostringstream y;
    // Names in the comments are quoted and escaped as in the values: a
    // line break in one would end the comment.
    y << "# Imported from " << yaml_quote(fs::path(ssp_).filename().string())
      << " (SystemStructure.ssd) by `rtcosim import ssp`:\n"
      << "# one fmu block per component, one wire per connection (docs/ssp.md).\n";
    for (const auto& c : components_) {
      y << "#   component " << yaml_quote(c.name) << " (source " << yaml_quote(c.source)
        << ", SystemStructure.ssd:" << c.line << ") -> block " << c.block << '\n';
    }
    for (const auto& s : system_outputs_) y << s << '\n';
    y << "name: " << yaml_quote(name_.empty() ? "ssp" : name_) << '\n';
    if (duration_) y << "duration: " << number_text(*duration_) << "s\n";
    y << "\ntasks:\n";
    const std::string task_tail = ", period: " + opt_.period + ", integrator: rk4, step: fixed}\n";
    if (opt_.tasks == SspTaskLayout::kOne) {
      y << "  - {name: system" << task_tail;
    } else {
      for (const auto& c : components_) y << "  - {name: " << yaml_quote(c.block) << task_tail;
    }
    y << "\nblocks:\n";
    for (const auto& c : components_) {
      const std::string rel = fs::path(c.fmu_file).lexically_proximate(graph_dir).string();
      utf8_path(rel);
      y << "  - name: " << yaml_quote(c.block) << "\n    type: fmu\n    task: "
        << (opt_.tasks == SspTaskLayout::kOne ? std::string("system") : yaml_quote(c.block)) << "\n    params:\n"
        << "      file: " << yaml_quote(rel) << '\n';
      if (!c.interface.empty()) y << "      interface: " << c.interface << '\n';
      if (!c.start.empty()) {
        y << "      start:\n";
        for (const auto& [var, value] : c.start)
          y << "        " << yaml_quote(var) << ": " << number_text(value) << '\n';
      }
    }
    if (!wires_.empty()) {
      y << "\nwires:\n";
      for (const auto& w : wires_) {
        y << "  - {from: " << yaml_quote(w.from_block + "." + w.from_port)
          << ", to: " << yaml_quote(w.to_block + "." + w.to_port) << "}   # SystemStructure.ssd:" << w.line << '\n';
      }
    }
    // Every Real output connector of a component, and whatever drives a
    // system output.
    std::vector<std::string> records;
    std::set<std::string> recorded;
    for (const auto& c : components_) {
      for (const auto& k : c.connectors) {
        if (k.kind != "output") continue;
        // Real outputs only: a wired Integer or Boolean output is recorded
        // below, where the fmu block takes it as a port.
        if (type_of(*c.variable(k.name)) != SspType::kReal) continue;
        records.push_back(c.block + "." + k.name);
        recorded.insert(records.back());
      }
    }
    for (const auto& r : extra_records_)
      if (recorded.insert(r).second) records.push_back(r);
    if (!records.empty()) {
      const std::string file =
          opt_.record_file.empty() ? block_name(name_.empty() ? "ssp" : name_) + ".csv" : opt_.record_file;
      utf8_path(file);
      y << "\nrecord:\n  file: " << yaml_quote(file) << "\n  signals: [";
      for (std::size_t i = 0; i < records.size(); ++i) y << (i ? ", " : "") << yaml_quote(records[i]);
      y << "]\n";
    }
    out.yaml = y.str();
    out.warnings = warnings_;
    return out;
  }

  // A path the graph names (from the options: the names of the SSP are
  // UTF-8 already) must read back as the same file.
  static void utf8_path(const std::string& path) {
    if (const std::size_t at = not_utf8_at(path))
      throw SspError(path + ": not valid UTF-8 (byte " + std::to_string(at) + ") — the graph cannot name it");
  }

  std::string ssp_;
  SspImportOptions opt_;
  std::unique_ptr<fmu::ExtractedArchive> archive_;
  std::string dir_;
  XmlFile ssd_;
  std::vector<std::unique_ptr<XmlFile>> parameter_files_;
  std::string name_;
  std::optional<double> duration_;
  std::map<std::string, UnitDef> units_;
  std::vector<Connector> system_connectors_;
  std::map<std::string, std::size_t, std::less<>> system_connector_index_;  // into system_connectors_
  std::vector<Component> components_;
  std::map<std::string, std::size_t, std::less<>> component_index_;  // by name, into components_
  std::set<std::string> block_names_;
  std::vector<std::pair<std::size_t, pugi::xml_node>> component_bindings_;
  std::map<std::string, std::shared_ptr<const fmu::ModelDescription>> descriptions_;
  std::map<std::string, std::shared_ptr<const std::unordered_map<std::string_view, const fmu::Variable*>>>
      variable_indexes_;  // by source, as descriptions_
  std::vector<Wire> wires_;
  std::map<std::string, std::size_t> driven_;
  std::vector<std::string> extra_records_, system_outputs_, warnings_;
  std::set<std::string> extra_record_set_;
  std::size_t connector_count_ = 0, parameter_count_ = 0, binding_count_ = 0;
};

}  // namespace

SspImport import_ssp(const std::string& ssp_path, const SspImportOptions& options) {
  std::optional<SspImport> out;
  std::exception_ptr error;
  int stop = 0;
  {
    const StopSignals signals;
    try {
      out = Importer(ssp_path, options).run();
    } catch (const Interrupted&) {
      // The importer is gone, and with it the unpacked archive.
    } catch (...) {
      error = std::current_exception();  // a signal noted before it still ends the process
    }
    stop = g_stop_signal;
  }
  if (stop != 0) {
    // Under the default action again: the process ends as the signal asked,
    // also when it came after the last step (the graph is not written).
    std::raise(stop);
    throw SspError(ssp_path + ": the import was stopped by " + std::string(strsignal(stop)));
  }
  if (error) std::rethrow_exception(error);
  return std::move(*out);
}

}  // namespace rtcosim::config
