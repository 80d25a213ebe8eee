// The `plant` block: measured signals of a real plant as a source of the
// diagram (docs/plant.md). Source `csv` replays a timestamped recording
// that is read and validated whole when the graph is built.
#include <algorithm>
#include <cmath>

#include "tasks/block_registry.hpp"
#include "tasks/plant/csv_table.hpp"
#include "tasks/plant/live_feed.hpp"

namespace rtcosim::tasks {

namespace {

// How simulation time maps to the plant's time, and whether every signal holds.
struct Replay {
  double start = 0.0;
  double rate = 1.0;
  bool hold_all = false;
};

Replay read_replay(const std::string& name, const BlockParams& p) {
  Replay r{p.number(name, "start", 0.0), p.positive(name, "rate", 1.0), false};
  const std::string interpolation = p.text(name, "interpolation", "linear");
  if (interpolation != "linear" && interpolation != "hold") {
    throw BlockError(
        "block '" + name + "' (plant): 'interpolation' = '" + interpolation + "' — expected linear or hold", name,
        "interpolation");
  }
  r.hold_all = interpolation == "hold";
  return r;
}

/*
 * PlantCsv: one output port per signal of the recording. At simulation
 * time t it shows the recording at file time start + rate * t: linearly
 * interpolated between rows (`interpolation: linear`, the derivative is the
 * segment's slope) or held from the last row at or before it (`hold`, and
 * always for on-change `events` signals, which then jump). Before the first
 * row the first values hold, after the last row the last ones.
 * RT-safe: a frame does a binary search in the pre-read times and indexes
 * the pre-read columns; nothing else. Being stateless in t it gives the same
 * outputs when a partition is rolled back and re-run.
 */
class PlantCsv final : public Block {
 public:
  PlantCsv(const std::string& name, const BlockParams& p) : Block(name, "plant") {
    (void)p.text(name, "source", "csv");
    const std::string file = p.text(name, "file", "");
    if (file.empty())
      throw BlockError("block '" + name + "' (plant): 'file' is required — the CSV recording", name, "file");
    const Replay replay = read_replay(name, p);
    start_ = replay.start;
    rate_ = replay.rate;
    const double mib = p.positive(name, "max_file_size", 64.0);
    plant::CsvOptions options;
    options.max_bytes = static_cast<std::uint64_t>(mib * 1048576.0);
    options.events = split_names(p.text(name, "events", ""));
    try {
      table_ = plant::CsvTable::read(file, options);
    } catch (const plant::CsvError& e) {
      throw BlockError("block '" + name + "' (plant): " + e.what(), name, "file");
    }
    const std::size_t n = table_.signals().size();
    held_.resize(n);
    for (std::size_t s = 0; s < n; ++s) {
      held_[s] = replay.hold_all || table_.is_event(s);
      add_output(table_.signals()[s], 1);
    }
    set_time_dependent();
    // A held signal jumps where its value changes, and any signal at a time
    // written twice (a step): the branch is the count of rows so far at
    // which one jumped, so that the links it drives restart their methods
    // exactly there.
    changes_.assign(table_.rows(), 0.0);
    for (std::size_t r = 1; r < table_.rows(); ++r) {
      const bool step = table_.time()[r] == table_.time()[r - 1];
      bool changed = false;
      for (std::size_t s = 0; s < n; ++s)
        changed = changed || ((held_[s] || step) && table_.column(s)[r] != table_.column(s)[r - 1]);
      changes_[r] = changes_[r - 1] + (changed ? 1.0 : 0.0);
    }
    set_jumps(table_.rows() > 1 && changes_.back() > 0.0);
  }

  [[nodiscard]] double branch(const BlockContext& c) const noexcept override {
    return changes_[table_.find(file_time(c.t))];
  }
  void output(const BlockContext& c) const noexcept override {
    const double ft = file_time(c.t);
    const std::size_t r = table_.find(ft);
    for (std::size_t s = 0; s < held_.size(); ++s) {
      const auto col = table_.column(s);
      const auto [slope, inside] = segment(s, r, ft);
      c.out(s, 0, inside ? col[r] + slope * (ft - table_.time()[r]) : col[r]);
    }
  }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    const double ft = file_time(c.t);
    const std::size_t r = table_.find(ft);
    for (std::size_t s = 0; s < held_.size(); ++s) {
      const auto [slope, inside] = segment(s, r, ft);
      c.out_derivative(s, 0, inside ? slope * rate_ : 0.0);
    }
  }

 private:
  [[nodiscard]] double file_time(double t) const noexcept { return start_ + rate_ * t; }
  // The slope (per file second) of signal s between row r and the next, and
  // whether ft lies on that segment (else the value holds).
  [[nodiscard]] std::pair<double, bool> segment(std::size_t s, std::size_t r, double ft) const noexcept {
    const auto time = table_.time();
    if (held_[s] || r + 1 >= time.size() || ft < time[r]) return {0.0, false};
    const auto col = table_.column(s);
    return {(col[r + 1] - col[r]) / (time[r + 1] - time[r]), true};
  }

  plant::CsvTable table_;
  std::vector<unsigned char> held_;
  std::vector<double> changes_;
  double start_ = 0.0;
  double rate_ = 1.0;
};

/*
 * PlantLive: a live source (a CSV file still being written, `follow: true`;
 * UDP datagrams, `source: udp`). A receiver thread (plant::LiveSource)
 * validates rows and hands them through a lock-free ring; each frame moves
 * what arrived into a history of the newest `history` rows and shows it at
 * file time start + rate * t like a recording: linear between rows or held,
 * the newest row held after it (never extrapolated), 0 before the first.
 * RT-safe: the frame pops the ring and indexes the pre-sized history.
 */
class PlantLive final : public Block {
 public:
  PlantLive(const std::string& name, const BlockParams& p, const std::string& source) : Block(name, "plant") {
    const Replay replay = read_replay(name, p);
    start_ = replay.start;
    rate_ = replay.rate;
    const auto events = split_names(p.text(name, "events", ""));
    const std::size_t ring = p.count(name, "ring", 1024, 2, 1u << 20);
    const std::size_t history = p.count(name, "history", 4096, 2, 1u << 24);
    max_lead_ = p.positive(name, "max_tag_lead", 10.0);
    std::vector<std::string> signals;
    try {
      if (source == "csv") {
        plant::FollowOptions o;
        o.path = p.text(name, "file", "");
        if (o.path.empty())
          throw BlockError("block '" + name + "' (plant): 'file' is required — the CSV file", name, "file");
        o.events = events;
        o.ring_rows = ring;
        signals = plant::follow_header(o);
        source_ = plant::acquire(o);
      } else {
        plant::UdpOptions o;
        o.port = static_cast<int>(p.count(name, "port", 0, 1, 65535));
        if (!p.has("port"))
          throw BlockError("block '" + name + "' (plant): 'port' is required — the UDP port to listen on", name,
                           "port");
        o.address = p.text(name, "address", "127.0.0.1");
        o.allow = split_names(p.text(name, "allow", "127.0.0.1"));
        o.signals = split_names(p.text(name, "signals", ""));
        if (o.signals.empty() || o.signals.size() > plant::kMaxLiveSignals) {
          throw BlockError("block '" + name + "' (plant): 'signals' names " + std::to_string(o.signals.size()) +
                               " — expected 1 to 64 comma-separated names, in the datagram's order",
                           name, "signals");
        }
        for (const auto& e : events) {
          if (std::find(o.signals.begin(), o.signals.end(), e) == o.signals.end())
            throw BlockError("block '" + name + "' (plant): 'events' names '" + e + "', which 'signals' does not", name,
                             "events");
        }
        o.ring_rows = ring;
        signals = o.signals;
        source_ = plant::acquire(o);
      }
    } catch (const plant::CsvError& e) {
      throw BlockError("block '" + name + "' (plant): " + e.what(), name, "file");
    } catch (const std::runtime_error& e) {
      if (dynamic_cast<const BlockError*>(&e)) throw;
      throw BlockError("block '" + name + "' (plant): " + e.what(), name, source == "csv" ? "file" : "port");
    }
    history_ = std::make_unique<plant::LiveHistory>(signals.size(), history);
    held_.resize(signals.size());
    bool any_held = false;
    for (std::size_t s = 0; s < signals.size(); ++s) {
      held_[s] = replay.hold_all || std::find(events.begin(), events.end(), signals[s]) != events.end();
      any_held = any_held || held_[s];
      add_output(signals[s], 1);
    }
    set_time_dependent();
    set_jumps(any_held);
  }

  [[nodiscard]] double branch(const BlockContext& c) const noexcept override {
    return history_->count_at(file_time(c.t));
  }
  [[nodiscard]] plant::LiveSource* live_source() const noexcept override { return source_.get(); }
  // A new run (Partition::reset, before the frames) starts with an empty
  // history: the last run's rows are not this one's.
  void initialize(std::span<double>, std::span<double>) const noexcept override { history_->clear(); }
  void output(const BlockContext& c) const noexcept override {
    const double ft = file_time(c.t);
    history_->take(*source_, ft, max_lead_);
    double slope = 0.0;
    for (std::size_t s = 0; s < held_.size(); ++s) c.out(s, 0, history_->at(s, ft, held_[s], slope));
  }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    const double ft = file_time(c.t);
    double slope = 0.0;
    for (std::size_t s = 0; s < held_.size(); ++s) {
      (void)history_->at(s, ft, held_[s], slope);
      c.out_derivative(s, 0, slope * rate_);
    }
  }

 private:
  [[nodiscard]] double file_time(double t) const noexcept { return start_ + rate_ * t; }

  std::shared_ptr<plant::LiveSource> source_;
  std::unique_ptr<plant::LiveHistory> history_;  // the consuming frame's only
  std::vector<unsigned char> held_;
  double start_ = 0.0;
  double rate_ = 1.0;
  double max_lead_ = 10.0;  // file seconds
};

/*
 * UdpOut: a sink that sends its inputs, once per step at the step's start
 * time, as plant datagrams (docs/plant.md) to a `plant` block with
 * `source: udp` in another process or on another host. RT-safe: the frame
 * offers one row to a pre-sized ring; a sender thread makes the datagrams.
 */
class UdpOut final : public Block {
 public:
  UdpOut(const std::string& name, const BlockParams& p) : Block(name, "udp_out") {
    plant::UdpOutOptions o;
    o.address = p.text(name, "address", "127.0.0.1");
    o.port = static_cast<int>(p.count(name, "port", 0, 1, 65535));
    if (!p.has("port"))
      throw BlockError("block '" + name + "' (udp_out): 'port' is required — where to send", name, "port");
    const auto signals = split_names(p.text(name, "signals", ""));
    if (signals.empty() || signals.size() > plant::kMaxLiveSignals) {
      throw BlockError("block '" + name + "' (udp_out): 'signals' names " + std::to_string(signals.size()) +
                           " — expected 1 to 64 comma-separated names: the inputs, in the datagram's order",
                       name, "signals");
    }
    o.signals = signals.size();
    o.ring_rows = p.count(name, "ring", 1024, 2, 1u << 20);
    try {
      sender_ = plant::acquire(o);
    } catch (const std::runtime_error& e) {
      throw BlockError("block '" + name + "' (udp_out): " + e.what(), name, "address");
    }
    for (const auto& s : signals) add_input(s, 1, false);
    set_sample_time(kEveryMajorStep);
  }
  void output(const BlockContext&) const noexcept override {}
  void update(const BlockContext& c) const noexcept override {
    row_.time = c.t;
    for (std::size_t i = 0; i < inputs().size(); ++i) row_.values[i] = c.in(i);
    sender_->offer(row_);
  }

 private:
  std::shared_ptr<plant::LiveSource> sender_;
  mutable plant::LiveRow row_;  // the frame's scratch
};

std::unique_ptr<Block> make_plant(const std::string& name, const BlockParams& p) {
  const std::string source = p.text(name, "source", "csv");
  if (source == "udp") return std::make_unique<PlantLive>(name, p, source);
  if (source != "csv") {
    throw BlockError("block '" + name + "' (plant): 'source' = '" + source + "' — expected csv or udp", name, "source");
  }
  if (p.flag(name, "follow", false)) return std::make_unique<PlantLive>(name, p, source);
  return std::make_unique<PlantCsv>(name, p);
}

}  // namespace

void register_plant_blocks(BlockRegistry& r) {
  r.add(
      {"plant",
       "measured signals of a plant: a CSV recording replayed (docs/plant.md)",
       {{"source", "text", "csv", "where the data come from: csv or udp"},
        {"follow", "boolean", "false", "csv: the file is still being written; a thread reads its new rows"},
        {"port", "count", "", "udp: the port to listen on (required)"},
        {"address", "text", "127.0.0.1", "udp: the IPv4 address to listen on"},
        {"allow", "text", "127.0.0.1", "udp: comma-separated IPv4 addresses of accepted senders"},
        {"signals", "text", "", "udp: comma-separated signal names, in the datagram's value order (required)"},
        {"ring", "count", "1024", "live: rows the receiver may hand over ahead of the frames"},
        {"history", "count", "4096", "live: newest rows kept for lookups (and re-runs from a snapshot)"},
        {"max_tag_lead", "positive number", "10",
         "live: a row tagged more than this many file seconds after the frame's file time is dropped and counted (s)"},
        {"file", "path", "", "the CSV recording (relative: to the task-graph file's directory)"},
        {"start", "number", "0", "file time shown at simulation time 0 (s)"},
        {"rate", "positive number", "1", "file seconds per simulation second"},
        {"interpolation", "text", "linear", "linear (between rows) or hold (the last row)"},
        {"events", "text", "", "comma-separated on-change signals: empty cells hold, values jump"},
        {"max_file_size", "positive number", "64", "the largest file read (MiB)"}},
       make_plant});
  r.add({"udp_out",
         "sends its inputs as plant datagrams, once per step (docs/plant.md)",
         {{"address", "text", "127.0.0.1", "the IPv4 address to send to"},
          {"port", "count", "", "the UDP port to send to (required)"},
          {"signals", "text", "", "comma-separated input names, in the datagram's value order (required)"},
          {"ring", "count", "1024", "rows the frames may hand over ahead of the sender thread"}},
         make_factory<UdpOut>()});
}

}  // namespace rtcosim::tasks
