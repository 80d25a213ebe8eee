#include "session/recording.hpp"

namespace rtcosim::session {

std::unique_ptr<Recording> Recording::open(runtime::RecordFormat format, const std::string& path, int fd,
                                           runtime::Graph& graph, runtime::Recorder& recorder,
                                           const std::string& graph_text, bool frames, std::string* why) {
  std::unique_ptr<Recording> r(new Recording());
  if (runtime::is_columnar(format)) {
    const auto layout = runtime::record_layout(graph, recorder, graph_text, frames);
    r->columns_ = fd >= 0 ? runtime::ColumnFile::adopt(format, fd, path, layout, why)
                          : runtime::ColumnFile::create(format, path, layout, why);
    if (!r->columns_) return nullptr;
  } else {
    r->csv_ = fd >= 0 ? runtime::RecordFile::adopt(fd, path) : runtime::RecordFile::create(path, why);
    if (!r->csv_) return nullptr;
    recorder.write_header(*r->csv_);
  }
  return r;
}

void Recording::drain(runtime::Recorder& recorder, std::span<const std::uint64_t> upto) {
  if (columns_) {
    recorder.drain(*columns_, upto);
  } else {
    recorder.drain(csv_.get(), upto);
  }
}

void Recording::finish(runtime::Recorder& recorder) {
  if (columns_) {
    recorder.finish(*columns_);
  } else {
    recorder.finish(csv_.get());
  }
}

runtime::RecordTarget& Recording::target() const noexcept {
  return columns_ ? static_cast<runtime::RecordTarget&>(*columns_) : *csv_;
}

void Recording::mark_reload(std::uint64_t reloads) {
  if (csv_) runtime::Recorder::write_reload_marker(*csv_, reloads);
}

}  // namespace rtcosim::session
