#include "rt_config/hosts.hpp"

namespace rtcosim::config {

namespace {

// DDS implementations differ in what a topic name may hold; letters,
// digits and '_' pass every one of them.
std::string topic_part(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!plain) c = '_';
  }
  return out.empty() ? std::string("_") : out;
}

}  // namespace

std::uint64_t graph_text_hash(std::string_view text) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string dds_topic_name(const GraphSpec& graph, const std::string& source, const std::string& consumer) {
  const auto dot = source.find('.');  // block names have none
  const std::string block = dot == std::string::npos ? source : source.substr(0, dot);
  const std::string port = dot == std::string::npos ? std::string() : source.substr(dot + 1);
  return "rtcosim_" + topic_part(graph.name.empty() ? "graph" : graph.name) + "_" + topic_part(block) + "__" +
         topic_part(port) + "__" + topic_part(consumer);
}

std::string dds_start_topic_name(const GraphSpec& graph) {
  return "rtcosim_" + topic_part(graph.name.empty() ? "graph" : graph.name) + "__start";
}

std::string dds_clock_topic_name(const GraphSpec& graph) {
  return "rtcosim_" + topic_part(graph.name.empty() ? "graph" : graph.name) + "__clock";
}

}  // namespace rtcosim::config
