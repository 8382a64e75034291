// communicator::impl — the state behind a communicator (internal).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine.hpp"
#include "keel/comm/communicator.hpp"
#include "progress.hpp"
#include "transport/device.hpp"

namespace keel::comm {

class communicator::impl {
 public:
  impl(store& s, int rank, int size, options o);
  ~impl();

  // Runs a schedule to completion or throws (and aborts the communicator).
  void run(detail::schedule& s, const call_info& call) { progress_->run(s, call); }
  // Starts a call: checks the communicator is alive, assigns seq and the deadline.
  call_info begin(collective c, dtype t, reduce_op op, std::size_t count, const call_options& o);
  choice choose(collective c, std::size_t bytes, algorithm requested) const;
  algorithm resolve(collective c, std::size_t bytes, algorithm requested);
  std::byte* scratch(std::size_t bytes, int which = 0);

  int rank_;
  int size_;
  options opts_;
  cost_model model_;
  bool any_tcp_ = false;
  std::uint64_t seq_ = 0;
  std::vector<std::uint64_t> p2p_send_seq_, p2p_recv_seq_;
  std::vector<transport> transport_of_;
  // The transports' devices (shm, tcp), and per peer the index of the one that reaches it.
  std::vector<std::unique_ptr<detail::device>> devices_;
  std::vector<int> device_of_;
  bool aborted_ = false;
  std::string abort_reason_;
  int abort_culprit_ = -1;
  std::vector<std::byte> scratch_[2];
  // Reused by every call (no allocation for small collectives).
  detail::schedule sched_{0};
  std::unique_ptr<detail::progress> progress_;
  // (collective, requested, bytes) -> algorithm: decisions made (and logged) so far.
  std::unordered_map<std::uint64_t, algorithm> decided_;

 private:
  void connect_all(store& s, const std::string& prefix);
  void tune(store& s, const std::string& prefix);
  void abort_all(int culprit, const std::string& reason) noexcept;
};

}  // namespace keel::comm
