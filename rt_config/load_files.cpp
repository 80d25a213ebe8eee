// No section of its own: the files that 'hosts', 'dds: security' and blocks' path parameters name.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "rt_config/load_context.hpp"

namespace rtcosim::config::detail {

namespace {

// `path` with links and `..` resolved, when that lies inside one of
// `roots` (each resolved too); nullopt otherwise. A file that does not exist
// (yet) is judged by its resolved directory, so the loader that opens it
// afterwards reports the missing file itself.
std::optional<std::string> confine_to_roots(const std::string& path, const std::vector<std::string>& roots) {
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::weakly_canonical(path, ec);
  if (ec) return std::nullopt;
  const std::string text = real.string();
  for (const auto& r : roots) {
    const std::filesystem::path root = std::filesystem::weakly_canonical(r, ec);
    if (ec) continue;
    std::string prefix = root.string();
    if (prefix.empty()) continue;
    if (prefix.back() != '/') prefix += '/';
    if (text.size() > prefix.size() && text.compare(0, prefix.size(), prefix) == 0) return text;
  }
  return std::nullopt;
}

}  // namespace

// A file the graph names (a block's 'path' parameter, a DDS Security
// document): relative to the task-graph file's directory, wherever
// rtcosim is started from; where the options confine files, its
// canonical form inside a root (what is checked is what is opened), or an
// error at `at` naming `label` (nullopt).
std::optional<std::string> GraphLoader::graph_file(const std::string& text, Location at, const std::string& label) {
  const auto slash = graph_.file.rfind('/');
  std::string path =
      text.empty() || text[0] == '/' || slash == std::string::npos ? text : graph_.file.substr(0, slash + 1) + text;
  if (!text.empty() && text[0] != '/') path = searched(text, path);
  if (!options_.file_roots || text.empty()) return path;
  const auto confined = confine_to_roots(path, *options_.file_roots);
  if (!confined) {
    const std::string roots = join(*options_.file_roots);
    in_.error(at, label + " names " + text + ", which is outside the directories files may be read from here (" +
                      (roots.empty() ? std::string("none") : roots) + ")" +
                      (options_.file_roots_hint.empty() ? "" : " — " + options_.file_roots_hint));
  }
  return confined;
}

// A relative name that is not beside the graph file (`beside`) is looked
// for, in order, under each directory of $RTCOSIM_PATH (colon-separated),
// the directory above the running binary (a build tree: build/bin/.. holds
// fmus/) and the package's data directory (/usr/share/rtcosim): so that an
// example naming fmus/airframe2.fmu runs from any build folder and from
// the installed package. The first that exists wins; none: `beside`, and
// the block that opens it reports the missing file. Where the options
// confine files, graph_file checks what is found like any other path.
std::string GraphLoader::searched(const std::string& text, const std::string& beside) {
  std::error_code ec;
  if (std::filesystem::exists(beside, ec)) return beside;
  std::vector<std::string> bases;
  if (const char* env = std::getenv("RTCOSIM_PATH")) {
    std::string list = env;
    for (std::size_t start = 0; start <= list.size();) {
      const std::size_t end = std::min(list.find(':', start), list.size());
      if (end > start) bases.push_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) bases.push_back(exe.parent_path().parent_path().string());
#ifdef RTCOSIM_DATADIR
  bases.emplace_back(RTCOSIM_DATADIR);
#endif
  for (const auto& base : bases) {
    const std::string candidate = base + "/" + text;
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
  }
  return beside;
}

}  // namespace rtcosim::config::detail
