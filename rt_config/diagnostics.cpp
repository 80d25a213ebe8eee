#include "rt_config/diagnostics.hpp"

#include <algorithm>

namespace rtcosim::config {

std::string Diagnostic::str() const {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line) + ":" + std::to_string(column);
  switch (severity) {
    case Severity::kError: out += ": error: "; break;
    case Severity::kWarning: out += ": warning: "; break;
    case Severity::kNote: out += ": note: "; break;
  }
  return out + message;
}

bool has_errors(const std::vector<Diagnostic>& diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Diagnostic::Severity::kError; });
}

std::size_t count(const std::vector<Diagnostic>& diagnostics, Diagnostic::Severity severity) {
  return static_cast<std::size_t>(std::count_if(diagnostics.begin(), diagnostics.end(),
                                                [&](const Diagnostic& d) { return d.severity == severity; }));
}

}  // namespace rtcosim::config
