#include "session/report/trace/trace_reader.hpp"

#include <cstring>
#include <filesystem>

#include <babeltrace2/babeltrace.h>

namespace rtcosim::trace_report {

namespace {

struct Sink {
  TraceData* data;
};

const bt_field* member(const bt_field* payload, const char* name) {
  return bt_field_structure_borrow_member_field_by_name_const(payload, name);
}
std::uint64_t u(const bt_field* payload, const char* name) {
  const bt_field* f = member(payload, name);
  return f ? bt_field_integer_unsigned_get_value(f) : 0;
}
std::int64_t i64(const bt_field* payload, const char* name) {
  const bt_field* f = member(payload, name);
  return f ? bt_field_integer_signed_get_value(f) : 0;
}
double real(const bt_field* payload, const char* name) {
  const bt_field* f = member(payload, name);
  return f ? bt_field_real_double_precision_get_value(f) : 0.0;
}
std::string text(const bt_field* payload, const char* name) {
  const bt_field* f = member(payload, name);
  return f ? bt_field_string_get_value(f) : "";
}

void take_event(const bt_message* msg, TraceData& d) {
  const bt_event* event = bt_message_event_borrow_event_const(msg);
  const char* name = bt_event_class_get_name(bt_event_borrow_class_const(event));
  if (!name || std::strncmp(name, "rtcosim:", 8) != 0) return;
  name += 8;
  const bt_field* p = bt_event_borrow_payload_field_const(event);
  std::int64_t ns = 0;
  if (bt_message_event_borrow_stream_class_default_clock_class_const(msg)) {
    bt_clock_snapshot_get_ns_from_origin(bt_message_event_borrow_default_clock_snapshot_const(msg), &ns);
  }
  if (d.events++ == 0) d.first_ns = ns;
  if (std::strcmp(name, "task_info") == 0) {
    TracedTask& t = d.tasks[static_cast<std::uint32_t>(u(p, "task"))];
    t.name = text(p, "name");
    t.cpu = static_cast<int>(i64(p, "cpu"));
    t.priority = static_cast<int>(i64(p, "priority"));
    t.period_s = real(p, "period_s");
  } else if (std::strcmp(name, "link_info") == 0) {
    TracedLink& l = d.links[static_cast<std::uint32_t>(u(p, "link"))];
    l.source = text(p, "source");
    l.consumer = text(p, "consumer");
    l.method = text(p, "method");
  } else if (std::strcmp(name, "frame_start") == 0) {
    TracedTask& t = d.tasks[static_cast<std::uint32_t>(u(p, "task"))];
    t.frames.push_back({u(p, "frame"), ns, i64(p, "latency_ns"), 0, 0.0, 0.0, false});
  } else if (std::strcmp(name, "frame_end") == 0) {
    TracedTask& t = d.tasks[static_cast<std::uint32_t>(u(p, "task"))];
    const std::uint64_t k = u(p, "frame");
    if (!t.frames.empty() && t.frames.back().frame == k) {
      TracedFrame& f = t.frames.back();
      f.exec_ns = i64(p, "exec_ns");
      f.step_s = real(p, "step_s");
      f.sim_s = real(p, "sim_s");
      f.ended = true;
    }
  } else if (std::strcmp(name, "overrun") == 0) {
    d.tasks[static_cast<std::uint32_t>(u(p, "task"))].overruns.push_back({ns, u(p, "frame"), u(p, "missed_periods")});
  } else if (std::strcmp(name, "link_publish") == 0) {
    TracedLink& l = d.links[static_cast<std::uint32_t>(u(p, "link"))];
    (u(p, "dropped") ? l.dropped : l.published)++;
  } else if (std::strcmp(name, "remote_send") == 0) {
    TracedLink& l = d.links[static_cast<std::uint32_t>(u(p, "link"))];
    (u(p, "ok") ? l.remote.sent : l.remote.send_errors)++;
  } else if (std::strcmp(name, "remote_receive") == 0) {
    TracedLink& l = d.links[static_cast<std::uint32_t>(u(p, "link"))];
    ++l.remote.received;
    if (u(p, "ring_full")) ++l.remote.ring_full;
  } else if (std::strcmp(name, "remote_lost") == 0) {
    TracedLink& l = d.links[static_cast<std::uint32_t>(u(p, "link"))];
    l.remote.lost += u(p, "lost");
    if (u(p, "reset")) ++l.remote.resets;
  } else if (std::strcmp(name, "link_drain") == 0) {
    TracedLink& l = d.links[static_cast<std::uint32_t>(u(p, "link"))];
    ++l.drains;
    if (u(p, "blocks") > 0) l.age_s.push_back(real(p, "age_s"));
  }
}

bt_graph_simple_sink_component_consume_func_status consume(bt_message_iterator* iterator, void* user) {
  auto* sink = static_cast<Sink*>(user);
  bt_message_array_const messages;
  std::uint64_t count = 0;
  switch (bt_message_iterator_next(iterator, &messages, &count)) {
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
      return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
      return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
      break;
    default:
      return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
  }
  for (std::uint64_t i = 0; i < count; ++i) {
    const bt_message* msg = messages[i];
    if (bt_message_get_type(msg) == BT_MESSAGE_TYPE_EVENT) {
      take_event(msg, *sink->data);
    } else if (bt_message_get_type(msg) == BT_MESSAGE_TYPE_DISCARDED_EVENTS) {
      std::uint64_t n = 0;
      if (bt_message_discarded_events_get_count(msg, &n) == BT_PROPERTY_AVAILABILITY_AVAILABLE) {
        sink->data->discarded_events += n;
      } else {
        ++sink->data->discarded_events;  // at least one
      }
    }
    bt_message_put_ref(msg);
  }
  return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

}  // namespace

// A trace directory worth opening: non-empty metadata and a non-empty
// stream. Another user's process that registers with the session daemon
// during a session leaves such an empty trace (ust/uid/<its uid>) beside
// ours, and babeltrace2 refuses the whole set when one input is empty.
static bool holds_events(const std::filesystem::path& trace_dir) {
  std::error_code ec;
  if (std::filesystem::file_size(trace_dir / "metadata", ec) == 0 || ec) return false;
  for (const auto& e : std::filesystem::directory_iterator(trace_dir, ec)) {
    if (e.is_regular_file(ec) && e.path().filename() != "metadata" && e.file_size(ec) > 0) return true;
  }
  return false;
}

bool read_trace(const std::string& directory, TraceData& out, std::string* error) {
  auto fail = [&](std::string why) {
    if (error) *error = std::move(why);
    return false;
  };
  std::error_code ec;
  if (!std::filesystem::is_directory(directory, ec)) return fail("'" + directory + "' is not a directory");
  const bt_plugin* ctf = nullptr;
  const bt_plugin* utils = nullptr;
  if (bt_plugin_find("ctf", BT_TRUE, BT_FALSE, BT_TRUE, BT_TRUE, BT_FALSE, &ctf) != BT_PLUGIN_FIND_STATUS_OK ||
      bt_plugin_find("utils", BT_TRUE, BT_FALSE, BT_TRUE, BT_TRUE, BT_FALSE, &utils) != BT_PLUGIN_FIND_STATUS_OK) {
    return fail(
        "babeltrace2's ctf and utils plugins are missing — install 'libbabeltrace2-0' plugins (apt-get install "
        "babeltrace2)");
  }
  bt_graph* graph = bt_graph_create(0);
  bt_value* params = bt_value_map_create();
  bt_value* inputs = nullptr;
  bt_value_map_insert_empty_array_entry(params, "inputs", &inputs);
  // source.ctf.fs opens trace directories (the ones holding a `metadata`
  // file); an LTTng output directory nests them (ust/uid/0/64-bit).
  std::size_t traces = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(directory, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().filename() == "metadata" && holds_events(it->path().parent_path())) {
      bt_value_array_append_string_element(inputs, it->path().parent_path().c_str());
      ++traces;
    }
  }
  if (traces == 0) {
    bt_value_put_ref(params);
    // (a trace with empty metadata or no stream data is not counted above)
    bt_graph_put_ref(graph);
    bt_plugin_put_ref(ctf);
    bt_plugin_put_ref(utils);
    return fail("'" + directory + "' holds no CTF trace (no 'metadata' file below it)");
  }
  const bt_component_source* source = nullptr;
  const bt_component_filter* muxer = nullptr;
  const bt_component_sink* sink_component = nullptr;
  Sink sink{&out};
  bool ok =
      bt_graph_add_source_component(graph, bt_plugin_borrow_source_component_class_by_name_const(ctf, "fs"), "source",
                                    params, BT_LOGGING_LEVEL_NONE, &source) == BT_GRAPH_ADD_COMPONENT_STATUS_OK;
  ok = ok && bt_graph_add_filter_component(graph, bt_plugin_borrow_filter_component_class_by_name_const(utils, "muxer"),
                                           "muxer", nullptr, BT_LOGGING_LEVEL_NONE,
                                           &muxer) == BT_GRAPH_ADD_COMPONENT_STATUS_OK;
  ok = ok && bt_graph_add_simple_sink_component(graph, "report", nullptr, consume, nullptr, &sink, &sink_component) ==
                 BT_GRAPH_ADD_COMPONENT_STATUS_OK;
  if (ok) {
    const std::uint64_t ports = bt_component_source_get_output_port_count(source);
    if (ports == 0) ok = false;
    for (std::uint64_t i = 0; ok && i < ports; ++i) {
      ok = bt_graph_connect_ports(graph, bt_component_source_borrow_output_port_by_index_const(source, i),
                                  bt_component_filter_borrow_input_port_by_index_const(muxer, i),
                                  nullptr) == BT_GRAPH_CONNECT_PORTS_STATUS_OK;
    }
    ok = ok && bt_graph_connect_ports(graph, bt_component_filter_borrow_output_port_by_index_const(muxer, 0),
                                      bt_component_sink_borrow_input_port_by_index_const(sink_component, 0),
                                      nullptr) == BT_GRAPH_CONNECT_PORTS_STATUS_OK;
  }
  bt_graph_run_status status = BT_GRAPH_RUN_STATUS_ERROR;
  if (ok) {
    do {
      status = bt_graph_run(graph);
    } while (status == BT_GRAPH_RUN_STATUS_AGAIN);
  }
  bt_graph_put_ref(graph);
  bt_value_put_ref(params);
  bt_plugin_put_ref(ctf);
  bt_plugin_put_ref(utils);
  bt_current_thread_clear_error();
  if (!ok) return fail("'" + directory + "' holds no CTF trace babeltrace2 can open");
  if (status != BT_GRAPH_RUN_STATUS_OK) return fail("reading the trace in '" + directory + "' failed part-way");
  return true;
}

}  // namespace rtcosim::trace_report
