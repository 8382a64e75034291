#include "shm_device.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace keel::comm::detail {

shm_device::shm_device(store& s, const config& c, std::chrono::steady_clock::time_point deadline)
    : pairs_(static_cast<std::size_t>(c.size)) {
  auto left = [&] {
    return std::max<std::chrono::milliseconds>(
        std::chrono::milliseconds(1), std::chrono::duration_cast<std::chrono::milliseconds>(
                                          deadline - std::chrono::steady_clock::now()));
  };
  domain_ = std::make_unique<shm_domain>(c.name_prefix, c.rank, c.local_ranks, c.chunk_bytes,
                                         c.slots, c.fd_wake);
  try {
    s.set_string(fmt::format("{}/shm/{}", c.key_prefix, c.rank), "1");
    std::vector<std::string> keys;
    for (int p : c.local_ranks) keys.push_back(fmt::format("{}/shm/{}", c.key_prefix, p));
    s.wait(keys, left());
    domain_->map_peers();
    s.set_string(fmt::format("{}/mapped/{}", c.key_prefix, c.rank), "1");
    keys.clear();
    for (int p : c.local_ranks) keys.push_back(fmt::format("{}/mapped/{}", c.key_prefix, p));
    s.wait(keys, left());
    domain_->unlink_own();
  } catch (...) {
    domain_->unlink_all();  // a peer died during setup: leave nothing behind
    throw;
  }
  for (int p : c.local_ranks) {
    if (p == c.rank) continue;
    for (int ch = 0; ch < k_channels; ++ch) {
      pairs_[static_cast<std::size_t>(p)][static_cast<std::size_t>(ch)] = domain_->make_pair(p, ch);
    }
  }
}

shm_device::~shm_device() {
  pairs_.clear();
  domain_->close();
}

pair* shm_device::pair_to(int peer, int channel) noexcept {
  if (peer < 0 || static_cast<std::size_t>(peer) >= pairs_.size()) return nullptr;
  return pairs_[static_cast<std::size_t>(peer)][static_cast<std::size_t>(channel)].get();
}

bool shm_device::arm(wake_via how) noexcept {
  domain_->announce_sleep(how == wake_via::fd);
  seen_ = domain_->bell();
  return true;
}

}  // namespace keel::comm::detail
