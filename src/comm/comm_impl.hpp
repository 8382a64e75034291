// communicator::impl — the state behind a communicator (internal).
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine.hpp"
#include "keel/comm/communicator.hpp"
#include "progress.hpp"
#include "transport/device.hpp"

namespace keel::comm {

// What one tag (call_options::tag) keeps from call to call: its sequence numbers, its
// schedule and scratch buffers (so that a small collective allocates nothing) and its
// algorithm decisions. One call at a time uses a lane (`busy`, claimed by the call).
struct lane {
  std::uint64_t seq = 0;
  std::vector<std::uint64_t> p2p_send_seq, p2p_recv_seq;
  detail::schedule sched{0};
  std::vector<std::byte> scratch[2];
  // (collective, requested, bytes) -> algorithm: decisions made (and logged) so far.
  std::unordered_map<std::uint64_t, algorithm> decided;
  std::atomic<bool> busy{false};
};

class communicator::impl {
 public:
  impl(store& s, int rank, int size, options o);
  ~impl();

  // Holds the lane of a tag for one call.
  class claim {
   public:
    claim(impl& m, std::uint32_t tag, collective c);
    ~claim();
    claim(const claim&) = delete;
    claim& operator=(const claim&) = delete;
    comm::lane& lane() const noexcept { return *lane_; }

   private:
    comm::lane* lane_;
  };

  // Runs a schedule to completion or throws (and aborts the communicator).
  void run(detail::schedule& s, const call_info& call) { progress_->run(s, call); }
  // Starts a call on `l`: checks the communicator is alive, assigns its tag and seq.
  call_info begin(lane& l, collective c, dtype t, reduce_op op, std::size_t count,
                  const call_options& o);
  choice choose(collective c, std::size_t bytes, algorithm requested) const;
  algorithm resolve(lane& l, collective c, std::size_t bytes, algorithm requested);
  static std::byte* scratch(lane& l, std::size_t bytes, int which = 0);

  int rank_;
  int size_;
  options opts_;
  cost_model model_;
  bool any_tcp_ = false;
  std::vector<transport> transport_of_;
  // The transports' devices (shm, tcp), and per peer the index of the one that reaches it.
  std::vector<std::unique_ptr<detail::device>> devices_;
  std::vector<int> device_of_;
  std::unique_ptr<detail::progress> progress_;
  // Lanes by tag; tag 0's always exists (seq() reads it; calls find it without the lock).
  std::mutex lanes_mutex_;
  std::unordered_map<std::uint32_t, std::unique_ptr<lane>> lanes_;
  lane* lane0_ = nullptr;
  // Set once, by the first error (abort_all).
  std::atomic<bool> aborted_{false};
  std::mutex abort_mutex_;
  std::string abort_reason_;
  int abort_culprit_ = -1;

 private:
  void connect_all(store& s, const std::string& prefix);
  void tune(store& s, const std::string& prefix);
  void abort_all(int culprit, const std::string& reason) noexcept;
};

}  // namespace keel::comm
