#pragma once

#include <string>
#include <vector>

namespace rtcosim::config {

/*
 * A problem found in a configuration file, printed as
 *   file:line:column: error: what — expected …
 * like a compiler, so editors can jump to it.
 */
struct Diagnostic {
  enum class Severity { kError, kWarning, kNote };
  Severity severity = Severity::kError;
  std::string file;
  int line = 0;    // 1-based; 0 when the file as a whole is meant
  int column = 0;  // 1-based
  std::string message;

  [[nodiscard]] std::string str() const;
};

[[nodiscard]] bool has_errors(const std::vector<Diagnostic>& diagnostics);
[[nodiscard]] std::size_t count(const std::vector<Diagnostic>& diagnostics, Diagnostic::Severity severity);

}  // namespace rtcosim::config
