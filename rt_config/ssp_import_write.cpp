// The SSP importer's output (ssp_import_internal.hpp): the components' FMUs copied out of the archive, and the
// task graph as YAML text, every string of the SSP in it quoted by yaml_quote.
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "rt_config/ssp_import_internal.hpp"

namespace rtcosim::config::ssp_detail {

// Each FMU once into fmu_dir, under its own file name (a suffix when two
// sources share one).
void Importer::write_fmus(SspImport& out) {
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

SspImport Importer::write() {
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
      for (const auto& [var, value] : c.start) y << "        " << yaml_quote(var) << ": " << number_text(value) << '\n';
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
void Importer::utf8_path(const std::string& path) {
  if (const std::size_t at = not_utf8_at(path))
    throw SspError(path + ": not valid UTF-8 (byte " + std::to_string(at) + ") — the graph cannot name it");
}

}  // namespace rtcosim::config::ssp_detail
