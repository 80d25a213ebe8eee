#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rt_config/graph_spec.hpp"

namespace rtcosim::config {

// FNV-1a 64 of a task-graph file's text: what hosts compare to agree that
// they run the same graph (docs/dds.md).
[[nodiscard]] std::uint64_t graph_text_hash(std::string_view text) noexcept;

// The DDS topic that carries the link from `source` ("block.port") into
// task `consumer` (docs/dds.md, "Topics"): "rtcosim_GRAPH_block__port__consumer"
// with every character outside [A-Za-z0-9_] of the names as '_'.
[[nodiscard]] std::string dds_topic_name(const GraphSpec& graph, const std::string& source,
                                         const std::string& consumer);

// The topic on which the hosts of a graph agree on their start:
// "rtcosim_GRAPH__start".
[[nodiscard]] std::string dds_start_topic_name(const GraphSpec& graph);
// The topic of the hosts' clock ping-pong: rtcosim_NAME__clock.
[[nodiscard]] std::string dds_clock_topic_name(const GraphSpec& graph);

}  // namespace rtcosim::config
