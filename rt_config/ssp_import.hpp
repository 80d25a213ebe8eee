#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rtcosim::config {

// An SSP that cannot be imported: one message naming the file and, where
// the problem is in an XML file of the archive, its line:
// "loop.ssp/SystemStructure.ssd:42: connection ...".
class SspError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class SspTaskLayout { kPerComponent, kOne };

// Bounds on what an SSP may hold: everything in it is hostile input.
struct SspLimits {
  std::size_t max_xml_bytes = 16u << 20;  // SystemStructure.ssd, one .ssv, one modelDescription.xml
  std::size_t max_xml_nodes = 200000;     // elements and attributes of one XML file
  std::size_t max_components = 1000;
  std::size_t max_connectors = 100000;  // over all components and the system
  std::size_t max_connections = 100000;
  std::size_t max_parameters = 100000;  // over all parameter sets
  std::size_t max_bindings = 1000;      // ParameterBinding elements
  std::size_t max_name_bytes = 1024;    // a component, connector or parameter name, a source URI
};

struct SspImportOptions {
  std::string period = "1ms";  // every task's period, as written in the graph
  SspTaskLayout tasks = SspTaskLayout::kPerComponent;
  // Where the components' FMUs are written (created when missing; a file
  // of the same name is replaced).
  std::string fmu_dir;
  // The directory the graph will be written to: the blocks' `file` paths
  // are relative to it. Empty: the current directory.
  std::string graph_dir;
  // `record: file:`; empty: "<SSD name>.csv".
  std::string record_file;
  SspLimits limits;
};

struct SspImport {
  std::string yaml;                   // the task graph
  std::vector<std::string> fmus;      // the FMU files written
  std::vector<std::string> warnings;  // what was ignored (one line each, with file:line)
};

// The line of a byte offset in a text, from a table of the offsets at which
// lines begin: a binary search per look-up, where counting from the text's
// start made an SSD of n connectors cost n^2 (66 000 of them: 114 s).
// Lines are 1-based and end at '\n'; an offset before the text is on line
// 1, one past its end on the last line.
class LineIndex {
 public:
  explicit LineIndex(std::string_view text = {});
  [[nodiscard]] std::size_t line_at(std::ptrdiff_t offset) const noexcept;

 private:
  std::vector<std::size_t> starts_;  // starts_[k]: the offset of line k + 1
};

/*
 * import_ssp: reads an SSP 1.0 package (a zip with SystemStructure.ssd,
 * the FMUs and parameter sets under resources/) and returns a task graph
 * of the system: one `fmu` block per component, one wire per connection
 * between components (kind, type and unit checked), start values from the
 * parameter bindings, one task per component or one task for all, every
 * output connector of a component recorded. The FMUs are copied out of the
 * archive into `fmu_dir`. Everything the standard allows that rtcosim
 * cannot run (nested systems, signal dictionaries, parameter mappings,
 * connection transformations, the system's inputs and parameters, String
 * and Binary values, ...) is refused by name with SspError; docs/ssp.md
 * lists it. Reads no code from the archive (no FMU binary is loaded).
 * Every string of the SSP that reaches the graph (names, sources, in values
 * and in comments) is a double-quoted YAML scalar with its line breaks and
 * control characters escaped; a name that is not UTF-8 is refused.
 * SIGTERM or SIGINT at their default action during the import stop it at
 * its next step: the unpacked archive is removed and the signal raised
 * again, so the process still ends by it. Set-up only.
 */
SspImport import_ssp(const std::string& ssp_path, const SspImportOptions& options);

}  // namespace rtcosim::config
