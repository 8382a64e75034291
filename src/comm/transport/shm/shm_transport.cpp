#include "shm_transport.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>

#include "keel/core/error.hpp"

namespace keel::comm::detail {
namespace {

// Slots start on 128-byte boundaries: a chunk's header line and its first payload line form
// one aligned pair, which the CPU's adjacent-line prefetch fetches together.
constexpr std::size_t k_slot_align = 128;
constexpr std::size_t k_control_bytes = 4096;
// shm_control::sleeping: how the owner sleeps (0: it does not).
constexpr std::uint32_t k_sleep_futex = 1;
constexpr std::uint32_t k_sleep_fd = 2;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// The consumer's counter, on a cache line of its own; the producer's progress is in the
// slots' stamps.
struct ring_counters {
  alignas(128) std::atomic<std::uint64_t> tail{0};
};
static_assert(sizeof(ring_counters) == 128);

long futex(std::atomic<std::uint32_t>* word, int op, std::uint32_t value, const timespec* ts) {
  return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op, value, ts, nullptr, 0);
}

// membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) usable by this process (registered once).
bool asymmetric_fences_init() {
  if (std::getenv("KEEL_COMM_NO_MEMBARRIER") != nullptr) return false;
  const long cmds = ::syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (cmds < 0 || !(cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) ||
      !(cmds & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED)) {
    return false;
  }
  return ::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
}

bool process_gone(int pid) {
  if (pid <= 0 || pid == ::getpid()) return false;
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  // A killed child stays a zombie until its parent reaps it: it is gone all the same.
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(stat, line)) return false;
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  const char state = line[close + 2];
  return state == 'Z' || state == 'X';
}

// A slot is a chunk_header and its payload; the header's last 8 bytes (`reserved`) are the
// slot's stamp: the sequence number (1, 2, ...) of the chunk written into it, stored last.
constexpr std::size_t k_stamp_offset = offsetof(chunk_header, reserved);
static_assert(k_stamp_offset == sizeof(chunk_header) - sizeof(std::uint64_t));
static_assert(k_stamp_offset % alignof(std::uint64_t) == 0);

// A whole message of at most k_inline_bytes travels inside its header's cache line, in the
// bytes of `offset` and `message_bytes` (it implies their values), flagged with
// k_flag_inline, which the receiving pair clears again: one cache line per small message
// (Open MPI's "fast boxes" do the same).
constexpr std::size_t k_inline_offset = offsetof(chunk_header, offset);
constexpr std::size_t k_inline_bytes = k_stamp_offset - k_inline_offset;
constexpr std::uint8_t k_flag_inline = 0x80;
static_assert(k_inline_bytes == 16 && k_inline_offset % 8 == 0);
static_assert(offsetof(chunk_header, message_bytes) + sizeof(std::uint64_t) == k_stamp_offset);

std::atomic_ref<std::uint64_t> stamp(std::byte* slot) {
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(slot + k_stamp_offset));
}

bool asymmetric_fences() noexcept {
  static const bool on = asymmetric_fences_init();
  return on;
}

class shm_pair final : public pair {
 public:
  shm_pair(std::byte* tx, doorbell tx_owner, std::byte* rx, doorbell rx_producer, int slots,
           std::size_t slot_bytes)
      : tx_(reinterpret_cast<ring_counters*>(tx)),
        tx_slots_(tx + sizeof(ring_counters)),
        tx_owner_(tx_owner),
        rx_(reinterpret_cast<ring_counters*>(rx)),
        rx_slots_(rx + sizeof(ring_counters)),
        rx_producer_(rx_producer),
        slots_(static_cast<std::uint64_t>(slots)),
        slot_bytes_(slot_bytes) {
    tx_tail_cache_ = tx_->tail.load(std::memory_order_relaxed);
    tx_head_ = tx_tail_cache_;
    rx_tail_ = rx_->tail.load(std::memory_order_relaxed);
  }

  bool try_send(const chunk_header& h, const void* payload) override {
    if (tx_head_ - tx_tail_cache_ >= slots_) {
      tx_tail_cache_ = tx_->tail.load(std::memory_order_acquire);
      if (tx_head_ - tx_tail_cache_ >= slots_) return false;
    }
    std::byte* slot = tx_slots_ + (tx_head_ % slots_) * slot_bytes_;
    // Everything but the stamp, then the payload, then the stamp (release): the receiver
    // polls the slot itself, so a small message costs it the header's and the payload's
    // cache lines and nothing else — or the header's alone when the payload is inline.
    if (h.nbytes <= k_inline_bytes && h.offset == 0 && h.message_bytes == h.nbytes &&
        !(h.flags & k_flag_abort)) {
      std::memcpy(slot, &h, k_inline_offset);
      slot[offsetof(chunk_header, flags)] |= std::byte{k_flag_inline};
      if (h.nbytes) std::memcpy(slot + k_inline_offset, payload, h.nbytes);
    } else {
      std::memcpy(slot, &h, k_stamp_offset);
      if (h.nbytes) std::memcpy(slot + sizeof h, payload, h.nbytes);
    }
    ++tx_head_;
    stamp(slot).store(tx_head_, std::memory_order_release);
    shm_domain::ring(tx_owner_);
    return true;
  }

  const chunk_header* peek(const std::byte** payload) override {
    std::byte* slot = rx_slots_ + (rx_tail_ % slots_) * slot_bytes_;
    // The slot's n-th use carries stamp n; an older stamp means it is not written yet.
    if (stamp(slot).load(std::memory_order_acquire) != rx_tail_ + 1) return nullptr;
    const auto* h = reinterpret_cast<const chunk_header*>(slot);
    if (!(h->flags & k_flag_inline)) {
      *payload = slot + sizeof(chunk_header);
      return h;
    }
    // An inline message: the header's tail held the payload; restore what it implies.
    std::memcpy(static_cast<void*>(&inline_header_), slot,
                k_inline_offset);  // offset, message_bytes below
    inline_header_.flags &= static_cast<std::uint8_t>(~k_flag_inline);
    inline_header_.offset = 0;
    inline_header_.message_bytes = inline_header_.nbytes;
    *payload = slot + k_inline_offset;
    return &inline_header_;
  }

  void release() override {
    ++rx_tail_;
    rx_->tail.store(rx_tail_, std::memory_order_release);
    shm_domain::ring(rx_producer_);
  }

 private:
  ring_counters* tx_;
  std::byte* tx_slots_;
  doorbell tx_owner_;
  ring_counters* rx_;
  std::byte* rx_slots_;
  doorbell rx_producer_;
  std::uint64_t slots_;
  std::size_t slot_bytes_;
  std::uint64_t tx_head_ = 0;
  std::uint64_t tx_tail_cache_ = 0;
  std::uint64_t rx_tail_ = 0;
  chunk_header inline_header_;  // peek()'s answer for an inline message
};

}  // namespace

shm_domain::shm_domain(std::string name_prefix, int rank, std::vector<int> local_ranks,
                       std::size_t chunk_bytes, int slots, bool fd_wake)
    : prefix_(std::move(name_prefix)),
      rank_(rank),
      local_ranks_(std::move(local_ranks)),
      chunk_bytes_(chunk_bytes),
      slots_(slots),
      fd_wake_(fd_wake) {
  my_local_ = local_index(rank);
  slot_bytes_ = round_up(sizeof(chunk_header) + chunk_bytes_, k_slot_align);
  ring_bytes_ = sizeof(ring_counters) + static_cast<std::size_t>(slots_) * slot_bytes_;
  const std::size_t n = local_ranks_.size();
  segment_bytes_ = k_control_bytes + n * k_channels * ring_bytes_;
  base_.assign(n, nullptr);
  ctl_.assign(n, nullptr);
  peer_fifo_.assign(n, -1);

  const std::string name = name_of(rank_);
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw keel::backend_error(fmt::format("shm_open {}: {}", name, std::strerror(errno)));
  }
  own_linked_ = true;
  if (::ftruncate(fd, static_cast<off_t>(segment_bytes_)) != 0) {
    const int e = errno;
    ::close(fd);
    unlink_own();
    throw keel::backend_error(
        fmt::format("ftruncate {} to {} bytes: {}", name, segment_bytes_, std::strerror(e)));
  }
  void* p = ::mmap(nullptr, segment_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    unlink_own();
    throw keel::backend_error(fmt::format("mmap {}: {}", name, std::strerror(errno)));
  }
  base_[my_local_] = static_cast<std::byte*>(p);
  ctl_[my_local_] = new (p) shm_control();
  ctl_[my_local_]->pid = ::getpid();
  ctl_[my_local_]->asymmetric = asymmetric_fences() ? 1 : 0;
  // Counters start at zero (fresh pages); placement-new them for the atomics' sake.
  for (std::size_t j = 0; j < n; ++j) {
    for (int c = 0; c < k_channels; ++c) {
      new (ring_base(my_local_, static_cast<int>(j), c)) ring_counters();
    }
  }
  if (fd_wake_) {
    const std::string path = fifo_path(rank_);
    if (::mkfifo(path.c_str(), 0600) != 0) {
      const int e = errno;
      unlink_own();
      throw keel::backend_error(fmt::format("mkfifo {}: {}", path, std::strerror(e)));
    }
    fifo_linked_ = true;
    // Read-write: the FIFO always has a writer, so it never reports EOF or hangs up.
    own_fifo_ = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (own_fifo_ < 0) {
      const int e = errno;
      unlink_own();
      throw keel::backend_error(fmt::format("open {}: {}", path, std::strerror(e)));
    }
  }
}

shm_domain::~shm_domain() {
  unlink_own();
  if (own_fifo_ >= 0) ::close(own_fifo_);
  for (int fd : peer_fifo_) {
    if (fd >= 0) ::close(fd);
  }
  for (std::byte* b : base_) {
    if (b) ::munmap(b, segment_bytes_);
  }
}

int shm_domain::local_index(int rank) const {
  const auto it = std::find(local_ranks_.begin(), local_ranks_.end(), rank);
  if (it == local_ranks_.end())
    throw keel::invalid_argument(fmt::format("rank {} is not local", rank));
  return static_cast<int>(it - local_ranks_.begin());
}

std::string shm_domain::name_of(int rank) const { return fmt::format("{}-{}", prefix_, rank); }

// Next to the segment, in the directory glibc's shm_open() uses.
std::string shm_domain::fifo_path(int rank) const {
  return fmt::format("/dev/shm{}.bell", name_of(rank));
}

std::byte* shm_domain::ring_base(int owner_local, int producer_local, int channel) const noexcept {
  return base_[owner_local] + k_control_bytes +
         (static_cast<std::size_t>(producer_local) * k_channels + channel) * ring_bytes_;
}

void shm_domain::map_peers() {
  for (std::size_t j = 0; j < local_ranks_.size(); ++j) {
    if (static_cast<int>(j) == my_local_) continue;
    const std::string name = name_of(local_ranks_[j]);
    const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0)
      throw keel::backend_error(fmt::format("shm_open {}: {}", name, std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) != segment_bytes_) {
      ::close(fd);
      throw keel::backend_error(fmt::format(
          "{}: segment has {} bytes, expected {} (ranks disagree on chunk size or slots)", name,
          st.st_size, segment_bytes_));
    }
    void* p = ::mmap(nullptr, segment_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED)
      throw keel::backend_error(fmt::format("mmap {}: {}", name, std::strerror(errno)));
    base_[j] = static_cast<std::byte*>(p);
    ctl_[j] = reinterpret_cast<shm_control*>(p);
    if (fd_wake_) {
      // A peer without TCP peers of its own has no FIFO (it never sleeps by fd). Opened
      // read-write too: the FIFO then always has a reader, so a write after its owner is
      // gone fills it (EAGAIN) instead of raising SIGPIPE.
      const std::string path = fifo_path(local_ranks_[j]);
      peer_fifo_[j] = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
      if (peer_fifo_[j] < 0 && errno != ENOENT) {
        throw keel::backend_error(fmt::format("open {}: {}", path, std::strerror(errno)));
      }
    }
  }
}

void shm_domain::unlink_own() noexcept {
  if (own_linked_) {
    ::shm_unlink(name_of(rank_).c_str());
    own_linked_ = false;
  }
  if (fifo_linked_) {
    ::unlink(fifo_path(rank_).c_str());
    fifo_linked_ = false;
  }
}

void shm_domain::unlink_all() noexcept {
  unlink_own();
  for (int r : local_ranks_) {
    ::shm_unlink(name_of(r).c_str());
    if (fd_wake_) ::unlink(fifo_path(r).c_str());
  }
}

std::unique_ptr<pair> shm_domain::make_pair(int peer, int channel) {
  const int p = local_index(peer);
  // tx: the ring for producer=me inside the peer's segment; rx: producer=peer in mine.
  const doorbell bell{ctl_[p], peer_fifo_[p]};
  return std::make_unique<shm_pair>(ring_base(p, my_local_, channel), bell,
                                    ring_base(my_local_, p, channel), bell, slots_, slot_bytes_);
}

void shm_domain::ring(const doorbell& d) noexcept {
  shm_control* c = d.ctl;
  // The chunk (or the freed slot) must be visible before `sleeping` is read. When both this
  // process and the doorbell's owner use membarrier(), the owner's membarrier() before it
  // sleeps orders our accesses for us; otherwise a full fence does.
  if (asymmetric_fences() && c->asymmetric) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  const std::uint32_t how = c->sleeping.load(std::memory_order_relaxed);
  if (how != 0) {
    c->bell.fetch_add(1, std::memory_order_acq_rel);
    if (how == k_sleep_fd && d.fd >= 0) {
      const char one = 1;
      [[maybe_unused]] const ssize_t w = ::write(d.fd, &one, 1);  // full: a wake is pending
    } else {
      futex(&c->bell, FUTEX_WAKE, INT_MAX, nullptr);
    }
  }
}

void shm_domain::announce_sleep(bool by_fd) noexcept {
  own()->sleeping.store(by_fd && own_fifo_ >= 0 ? k_sleep_fd : k_sleep_futex,
                        std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Every registered thread that may ring us (running now or not) passes a full barrier:
  // afterwards either its chunk is visible to our last check, or it sees `sleeping`.
  if (own()->asymmetric) {
    ::syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0);
  }
}

void shm_domain::end_sleep() noexcept { own()->sleeping.store(0, std::memory_order_relaxed); }

void shm_domain::sleep(std::uint32_t seen, int timeout_ms) noexcept {
  timespec ts{timeout_ms / 1000, static_cast<long>(timeout_ms % 1000) * 1000000L};
  futex(&own()->bell, FUTEX_WAIT, seen, &ts);
}

void shm_domain::drain_bell_fd() noexcept {
  char buf[256];
  while (own_fifo_ >= 0 && ::read(own_fifo_, buf, sizeof buf) == static_cast<ssize_t>(sizeof buf)) {
  }
}

void shm_domain::wake_self() noexcept {
  own()->bell.fetch_add(1, std::memory_order_acq_rel);
  futex(&own()->bell, FUTEX_WAKE, INT_MAX, nullptr);
  if (own_fifo_ >= 0) {
    const char one = 1;
    [[maybe_unused]] const ssize_t w = ::write(own_fifo_, &one, 1);
  }
}

void shm_domain::wake_all_peers() noexcept {
  for (std::size_t j = 0; j < ctl_.size(); ++j) {
    shm_control* peer = ctl_[j];
    if (!peer || static_cast<int>(j) == my_local_) continue;
    peer->bell.fetch_add(1);
    futex(&peer->bell, FUTEX_WAKE, INT_MAX, nullptr);
    if (peer_fifo_[j] >= 0) {
      const char one = 1;
      [[maybe_unused]] const ssize_t w = ::write(peer_fifo_[j], &one, 1);
    }
  }
}

peer_health shm_domain::health(int peer) const {
  const shm_control* c = ctl_[local_index(peer)];
  peer_health h;
  const std::uint32_t state = c->state.load(std::memory_order_acquire);
  if (state == 1) {
    h.ok = false;
    h.aborted = true;
    h.culprit = c->culprit;
    h.reason.assign(c->reason, strnlen(c->reason, sizeof c->reason));
  } else if (state == 2) {
    h.ok = false;
    h.closed = true;
    h.culprit = peer;
  } else if (process_gone(c->pid)) {
    h.ok = false;
    h.dead = true;
    h.culprit = peer;
  }
  return h;
}

int shm_domain::root_of_stall(std::uint64_t call_id, int peer) const {
  for (std::size_t hops = 0; hops < local_ranks_.size(); ++hops) {
    const auto it = std::find(local_ranks_.begin(), local_ranks_.end(), peer);
    if (it == local_ranks_.end()) return peer;
    const shm_control* c = ctl_[static_cast<std::size_t>(it - local_ranks_.begin())];
    // It gave up already: trust whom it blamed.
    if (c->state.load(std::memory_order_acquire) == 1 && c->culprit >= 0) return c->culprit;
    const int next = c->wait_for.load(std::memory_order_relaxed);
    if (c->wait_call.load(std::memory_order_relaxed) != call_id || next < 0 || next == rank_) {
      return peer;
    }
    peer = next;
  }
  return peer;
}

void shm_domain::abort(int culprit, const std::string& reason) noexcept {
  shm_control* c = own();
  if (c->state.load() != 0) return;
  c->culprit = culprit;
  const std::size_t n = std::min(reason.size(), sizeof c->reason - 1);
  std::memcpy(c->reason, reason.data(), n);
  c->reason[n] = '\0';
  c->state.store(1, std::memory_order_release);
  wake_all_peers();
}

void shm_domain::close() noexcept {
  shm_control* c = own();
  std::uint32_t expected = 0;
  if (c->state.compare_exchange_strong(expected, 2)) wake_all_peers();
}

}  // namespace keel::comm::detail
