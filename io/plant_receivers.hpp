#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tasks/plant/live_feed.hpp"

namespace rtcosim::io {

/*
 * PlantReceivers: the live plant sources' producers (docs/plant.md): a
 * followed CSV file's tail, a UDP socket that receives plant datagrams
 * (io/plant_datagram.hpp), a UDP socket that sends the `udp_out` block's.
 * Each is a source with its own non-real-time thread, started when a block
 * first asks for its key and stopped (joined, its socket or file closed)
 * when the last block holding it goes: a graph's sources live as long as
 * its blocks. The registry holds weak references only, so that the
 * configuration check's instances of a block and the one that runs share a
 * thread and a socket.
 *
 * One per process, made by the front end before it loads a graph:
 * constructing it installs it for the block layer
 * (tasks::plant::install_receivers), destroying it uninstalls it; a second
 * one while the first lives is refused (std::logic_error). Destroy it after
 * the last graph. Thread-safe; not on the real-time path (a frame only
 * touches a source's ring).
 */
class PlantReceivers final : public tasks::plant::LiveReceivers {
 public:
  PlantReceivers();
  ~PlantReceivers() override;
  PlantReceivers(const PlantReceivers&) = delete;
  PlantReceivers& operator=(const PlantReceivers&) = delete;

  std::shared_ptr<tasks::plant::LiveSource> open(const tasks::plant::SourceOptions& options) override;
  void go_offline() noexcept override;
  std::vector<tasks::plant::LiveStatus> status() override;

 private:
  // One per kind of source: its key (what the check's block and the
  // running one share) and how it is made.
  std::shared_ptr<tasks::plant::LiveSource> open_kind(const tasks::plant::FollowOptions& options);
  std::shared_ptr<tasks::plant::LiveSource> open_kind(const tasks::plant::UdpOptions& options);
  std::shared_ptr<tasks::plant::LiveSource> open_kind(const tasks::plant::UdpOutOptions& options);
  template <typename Make>
  std::shared_ptr<tasks::plant::LiveSource> acquire(const std::string& key, Make make, std::size_t signals);

  std::mutex mutex_;
  std::map<std::string, std::weak_ptr<tasks::plant::LiveSource>> sources_;
  bool offline_ = false;
};

}  // namespace rtcosim::io
