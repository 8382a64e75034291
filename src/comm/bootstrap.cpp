// communicator bootstrap: the options from the environment, the store exchange, the
// shared-memory segments and the TCP mesh, the cost model's measurement, and abort.
#include "keel/comm/communicator.hpp"

#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "algorithms.hpp"
#include "comm_impl.hpp"
#include "keel/comm/environment.hpp"
#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"
#include "keel/core/log.hpp"
#include "net.hpp"
#include "parse.hpp"
#include "reduce.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace keel::comm {
namespace {

using steady = std::chrono::steady_clock;

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::string host_identity() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  std::string boot;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::getline(in, boot);
  return fmt::format("{}/{}", name, boot);
}

std::string advertised_address() {
  if (auto a = env("KEEL_COMM_ADDR")) return *a;
  if (auto m = env("MASTER_ADDR")) {
    try {
      return net::local_address_towards(*m);
    } catch (const std::exception&) {
    }
  }
  return "127.0.0.1";
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, sep)) parts.push_back(part);
  return parts;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct hello {
  std::uint32_t magic = detail::k_chunk_magic;
  std::int32_t rank = -1;
  std::int32_t channel = -1;
  std::uint32_t pad = 0;
  std::uint64_t nonce = 0;
};

}  // namespace

// ------------------------------------------------------------------ options

options options::from_env(options base) {
  if (auto a = env("KEEL_COMM_ALGO")) base.algo = parse_algorithm(*a);
  if (auto t = env("KEEL_COMM_TRANSPORT")) base.transport_kind = parse_transport(*t);
  if (auto t = env("KEEL_COMM_TIMEOUT")) {
    char* end = nullptr;
    const double seconds = std::strtod(t->c_str(), &end);
    if (end == t->c_str() || *end != '\0' || !(seconds > 0) || seconds > 1e7) {
      throw keel::invalid_argument(
          fmt::format("KEEL_COMM_TIMEOUT='{}': expected a positive number of seconds", *t));
    }
    base.timeout = duration(static_cast<std::int64_t>(seconds * 1000));
  }
  if (auto c = env("KEEL_COMM_CHUNK")) base.chunk_bytes = static_cast<std::size_t>(parse_size(*c));
  return base;
}

// ------------------------------------------------------------------ impl: bootstrap

communicator::impl::impl(store& s, int rank, int size, options o)
    : rank_(rank), size_(size), opts_(std::move(o)) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw keel::invalid_argument(
        fmt::format("rank {} / size {}: need 0 <= rank < size", rank, size));
  }
  if (opts_.chunk_bytes < 64 || opts_.chunk_bytes % 64 != 0 || opts_.chunk_bytes > (1u << 30)) {
    throw keel::invalid_argument(fmt::format(
        "chunk size {} bytes: must be a multiple of 64 between 64 B and 1 GiB", opts_.chunk_bytes));
  }
  if (opts_.shm_slots < 2 || opts_.shm_slots > 64) {
    throw keel::invalid_argument(fmt::format("shm_slots {}: must be in [2, 64]", opts_.shm_slots));
  }
  if (opts_.timeout.count() <= 0) throw keel::invalid_argument("timeout must be positive");
  opts_.reducer_rank = ((opts_.reducer_rank % size) + size) % size;
  // The idle policy's overrides, read strictly before anything else happens (a typo must not
  // silently become 0 or a different number).
  std::optional<int> spin_override, yield_override;
  constexpr long k_max_idle_us = 60L * 1000 * 1000;  // a minute
  if (auto v = env("KEEL_COMM_SPIN_US")) {
    spin_override =
        static_cast<int>(detail::env_integer("KEEL_COMM_SPIN_US", *v, 0, k_max_idle_us));
  }
  if (auto v = env("KEEL_COMM_YIELD_US")) {
    yield_override =
        static_cast<int>(detail::env_integer("KEEL_COMM_YIELD_US", *v, 0, k_max_idle_us));
  }
  p2p_send_seq_.assign(size, 0);
  p2p_recv_seq_.assign(size, 0);
  pairs_.resize(size);
  transport_of_.assign(size, transport::auto_select);
  const std::string prefix =
      opts_.name.empty()
          // The n-th communicator this rank makes on this store, counted in the store itself
          // so that ranks agree whether they are processes or threads.
          ? fmt::format("keel/comm/{}", s.add(fmt::format("keel/comm/instances/{}", rank), 1))
          : opts_.name;
  if (size > 1) {
    connect_all(s, prefix);
    // Idle policy: with a core per local rank, busy-poll (like MPI) for 100 ms before sleeping;
    // oversubscribed (more ranks here than CPUs), spinning steals the core a peer needs, so
    // yield for 2 ms instead, then sleep. A rank pinned to one CPU never yields while it
    // spins (no peer can be waiting for that CPU); an unpinned one yields now and then once
    // it has waited over a millisecond, in case its peer was scheduled on the same CPU.
    const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    int local = 0;
    for (int p = 0; p < size; ++p) local += transport_of_[p] == transport::shm || p == rank;
    const bool oversubscribed = local > cpus;
    detail::idle_policy idle;
    idle.spin_us = oversubscribed ? 0 : 100000;
    idle.yield_us = oversubscribed ? 2000 : 0;
    cpu_set_t mine;
    CPU_ZERO(&mine);
    idle.spin_yields = !(::sched_getaffinity(0, sizeof mine, &mine) == 0 && CPU_COUNT(&mine) == 1);
    if (spin_override) idle.spin_us = *spin_override;
    if (yield_override) idle.yield_us = *yield_override;
    detail::links l;
    l.rank = rank_;
    l.chunk_bytes = opts_.chunk_bytes;
    l.pairs = &pairs_;
    l.shm = shm_.get();
    l.epoll_fd = epoll_fd_;
    progress_ = std::make_unique<detail::progress>(
        l, [this](int culprit, const std::string& reason) { abort_all(culprit, reason); });
    progress_->policy = idle;
    if (opts_.tune) tune(s, prefix);
    // Everyone is past the store once this returns: the store's host may go away.
    detail::schedule sched(size_);
    call_info call;
    call.coll = collective::barrier;
    call.algo = algorithm::rd;
    call.timeout = opts_.timeout;
    call.deadline = steady::now() + opts_.timeout;
    detail::barrier_rd(sched, {rank_, size_, nullptr, nullptr, 0, 1, 0, {}});
    run(sched, call);
  }
}

communicator::impl::~impl() {
  if (shm_) shm_->close();
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

void communicator::impl::connect_all(store& s, const std::string& prefix) {
  const auto deadline = steady::now() + opts_.timeout;
  auto left = [&] {
    return std::max<std::chrono::milliseconds>(
        std::chrono::milliseconds(1),
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()));
  };
  // 1. Rank 0 draws a nonce that names this communicator's segments and authenticates
  //    its TCP connections.
  if (rank_ == 0) {
    std::random_device rd;
    const std::uint64_t nonce =
        (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^
        static_cast<std::uint64_t>(steady::now().time_since_epoch().count());
    s.set_string(prefix + "/nonce", fmt::format("{:016x}", nonce));
  }
  const std::string nonce_text = s.get_string(prefix + "/nonce", left());
  if (nonce_text.size() != 16) {
    throw keel::backend_error(fmt::format("bootstrap: rank 0 published a bad nonce in the store"));
  }
  const std::uint64_t nonce = detail::parse_published<std::uint64_t>(nonce_text, "nonce", 0, 16);

  // 2. Publish how to reach this rank.
  std::uint16_t port = 0;
  // A rank reachable at a loopback address only (a single-host job) listens there only.
  const std::string advertised = advertised_address();
  bool loopback = false;
  try {
    loopback = net::is_loopback(advertised);
  } catch (const keel::error&) {
  }
  const int listen_fd = net::listen_on(loopback ? advertised : "0.0.0.0", 0, port);
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } listen_closer{listen_fd};
  const std::string me = host_identity();
  s.set_string(fmt::format("{}/info/{}", prefix, rank_),
               fmt::format("{}|{}|{}|{}", me, advertised, port, ::getpid()));
  std::vector<std::string> hosts(size_), addrs(size_);
  std::vector<std::uint16_t> ports(size_);
  for (int p = 0; p < size_; ++p) {
    const auto parts = split(s.get_string(fmt::format("{}/info/{}", prefix, p), left()), '|');
    if (parts.size() != 4)
      throw keel::backend_error(fmt::format("rank {} published a bad address", p));
    hosts[p] = parts[0];
    addrs[p] = parts[1];
    const auto port_number = detail::parse_published<std::uint32_t>(parts[2], "port", p);
    if (port_number < 1 || port_number > 65535) {
      throw keel::backend_error(
          fmt::format("bootstrap: rank {} published port {}", p, port_number));
    }
    ports[p] = static_cast<std::uint16_t>(port_number);
  }
  std::vector<int> local;
  for (int p = 0; p < size_; ++p) {
    const bool same_host = hosts[p] == me;
    if (opts_.transport_kind == transport::shm && !same_host) {
      throw keel::invalid_argument(fmt::format(
          "transport shm requested but rank {} runs on another host ({})", p, hosts[p]));
    }
    const bool shm = same_host && opts_.transport_kind != transport::tcp;
    transport_of_[p] = p == rank_ ? transport::shm : (shm ? transport::shm : transport::tcp);
    if (shm) local.push_back(p);
    if (!shm) any_tcp_ = true;
  }

  // 3. Shared memory among the ranks of this host.
  if (local.size() > 1) {
    const std::string job = env("KEEL_COMM_JOB").value_or("j");
    shm_ = std::make_unique<detail::shm_domain>(fmt::format("/keel-{}-{}", job, nonce_text), rank_,
                                                local, opts_.chunk_bytes, opts_.shm_slots);
    try {
      s.set_string(fmt::format("{}/shm/{}", prefix, rank_), "1");
      std::vector<std::string> keys;
      for (int p : local) keys.push_back(fmt::format("{}/shm/{}", prefix, p));
      s.wait(keys, left());
      shm_->map_peers();
      s.set_string(fmt::format("{}/mapped/{}", prefix, rank_), "1");
      keys.clear();
      for (int p : local) keys.push_back(fmt::format("{}/mapped/{}", prefix, p));
      s.wait(keys, left());
      shm_->unlink_own();
    } catch (...) {
      shm_->unlink_all();  // a peer died during setup: leave nothing behind
      throw;
    }
    for (int p : local) {
      if (p == rank_) continue;
      for (int c = 0; c < detail::k_channels; ++c) pairs_[p][c] = shm_->make_pair(p, c);
    }
  }

  // 4. TCP to everyone else: connect to lower ranks, accept from higher ones.
  if (any_tcp_) {
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    int expected = 0;
    for (int p = 0; p < size_; ++p) {
      if (p == rank_ || transport_of_[p] != transport::tcp) continue;
      if (p > rank_) {
        expected += detail::k_channels;
        continue;
      }
      for (int c = 0; c < detail::k_channels; ++c) {
        const std::string host = hosts[p] == me ? std::string("127.0.0.1") : addrs[p];
        const int fd = net::connect_to(host, ports[p], deadline);
        if (fd < 0) {
          throw timeout_error(fmt::format("bootstrap on rank {}: rank {} at {}:{} did not accept "
                                          "within {} ms",
                                          rank_, p, host, ports[p], opts_.timeout.count()),
                              "bootstrap", 0, p);
        }
        hello h;
        h.rank = rank_;
        h.channel = c;
        h.nonce = nonce;
        if (!net::send_all(fd, &h, sizeof h, deadline)) {
          ::close(fd);
          throw timeout_error(fmt::format("bootstrap on rank {}: rank {} stalled", rank_, p),
                              "bootstrap", 0, p);
        }
        pairs_[p][c] = detail::make_tcp_pair(fd, p, opts_.chunk_bytes);
      }
    }
    accept_peers(listen_fd, expected, nonce, deadline);
    for (int p = 0; p < size_; ++p) {
      if (transport_of_[p] != transport::tcp) continue;
      for (int c = 0; c < detail::k_channels; ++c) {
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
        ev.data.u32 = static_cast<std::uint32_t>(p);
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, detail::tcp_pair_fd(*pairs_[p][c]), &ev);
      }
    }
  }
}

// The TCP connections from higher ranks. Connections are read side by side (poll), so a
// stray one that never sends its hello, or closes, costs nothing but its own slot: at most
// 64 at once, each dropped after 5 s or a wrong hello (magic, nonce, rank, channel).
void communicator::impl::accept_peers(int listen_fd, int expected, std::uint64_t nonce,
                                      steady::time_point deadline) {
  struct pending {
    int fd;
    hello h;
    std::size_t got;
    steady::time_point since;
  };
  std::vector<pending> waiting;
  struct closer {
    std::vector<pending>& w;
    ~closer() {
      for (auto& p : w) ::close(p.fd);
    }
  } waiting_closer{waiting};
  net::set_nonblocking(listen_fd);
  int accepted = 0;
  std::vector<pollfd> fds;
  while (accepted < expected) {
    if (steady::now() >= deadline) {
      throw timeout_error(fmt::format("bootstrap on rank {}: {} of {} connections from higher "
                                      "ranks arrived within {} ms",
                                      rank_, accepted, expected, opts_.timeout.count()),
                          "bootstrap", 0, -1);
    }
    fds.assign(1, pollfd{listen_fd, POLLIN, 0});
    for (const auto& w : waiting) fds.push_back({w.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), net::ms_until(deadline, 100)) < 0 && errno != EINTR) {
      throw keel::backend_error(fmt::format("bootstrap: poll: {}", std::strerror(errno)));
    }
    const auto now = steady::now();
    if (fds[0].revents & POLLIN) {
      while (true) {
        const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) break;  // EAGAIN, or a transient error: poll again
        if (waiting.size() >= 64) {
          ::close(fd);
          continue;
        }
        net::set_nodelay(fd);
        waiting.push_back({fd, hello{}, 0, now});
      }
    }
    for (std::size_t i = waiting.size(); i-- > 0;) {
      pending& w = waiting[i];
      const ssize_t r =
          ::recv(w.fd, reinterpret_cast<char*>(&w.h) + w.got, sizeof w.h - w.got, MSG_DONTWAIT);
      if (r > 0) w.got += static_cast<std::size_t>(r);
      const bool gone =
          r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
      bool ours = false;
      if (!gone && w.got == sizeof w.h) {
        const hello& h = w.h;
        ours = h.magic == detail::k_chunk_magic && h.nonce == nonce && h.rank > rank_ &&
               h.rank < size_ && h.channel >= 0 && h.channel < detail::k_channels &&
               !pairs_[h.rank][h.channel];
        if (ours) {
          pairs_[h.rank][h.channel] = detail::make_tcp_pair(w.fd, h.rank, opts_.chunk_bytes);
          ++accepted;
        }
      }
      if (ours || gone || w.got == sizeof w.h || now - w.since > std::chrono::seconds(5)) {
        if (!ours) ::close(w.fd);  // a stray connection: not one of ours
        waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
  }
}

// Ping-pong with a partner (rank ^ 1) for latency and bandwidth, a local reduction for
// gamma; every rank publishes its numbers and all take the same medians.
void communicator::impl::tune(store& s, const std::string& prefix) {
  const int partner = rank_ ^ 1;
  std::string mine = "-";
  auto one_way = [&](std::size_t bytes, int rounds) {
    std::vector<std::byte> buf(std::max<std::size_t>(bytes, 1));
    double best = 1e30;
    for (int i = 0; i < rounds; ++i) {
      detail::schedule sched(size_);
      if (rank_ < partner) {
        sched.send(partner, 0, buf.data(), bytes);
        sched.recv(partner, 0, buf.data(), bytes, {0});
      } else {
        sched.recv(partner, 0, buf.data(), bytes);
        sched.send(partner, 0, buf.data(), bytes, {0});
      }
      call_info call;
      call.coll = collective::sendrecv;
      call.type = dtype::u8;
      call.count = bytes;
      call.timeout = opts_.timeout;
      call.deadline = steady::now() + opts_.timeout;
      const auto t0 = steady::now();
      run(sched, call);
      best = std::min(best, std::chrono::duration<double>(steady::now() - t0).count() / 2);
    }
    return best;
  };
  if (partner < size_) {
    const double small = one_way(8, 20);
    const std::size_t big_bytes = 4 * opts_.chunk_bytes;
    const double big = one_way(big_bytes, 3);
    const double alpha = small;
    const double beta = std::max(1e-12, (big - small) / static_cast<double>(big_bytes));
    mine = fmt::format("{}|{:.6e}|{:.6e}", to_string(transport_of_[partner]), alpha, beta);
  }
  // gamma: reduce 1 MiB of floats into place, best of 3.
  {
    std::vector<float> a(1 << 18, 1.0f), b(1 << 18, 2.0f);
    double best = 1e30;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = steady::now();
      detail::reduce(a.data(), a.data(), b.data(), a.size(), dtype::f32, reduce_op::sum);
      best = std::min(best, std::chrono::duration<double>(steady::now() - t0).count());
    }
    mine += fmt::format("|{:.6e}", best / (a.size() * sizeof(float)));
  }
  s.set_string(fmt::format("{}/tune/{}", prefix, rank_), mine);
  std::vector<double> as, bs, at, bt, gs;
  for (int p = 0; p < size_; ++p) {
    const auto parts =
        split(s.get_string(fmt::format("{}/tune/{}", prefix, p), opts_.timeout), '|');
    if (parts.size() != 2 && parts.size() != 4) {
      throw keel::backend_error(fmt::format("bootstrap: rank {} published bad measurements", p));
    }
    if (parts.size() == 4) {
      (parts[0] == "shm" ? as : at)
          .push_back(detail::parse_published<double>(parts[1], "latency", p));
      (parts[0] == "shm" ? bs : bt)
          .push_back(detail::parse_published<double>(parts[2], "bandwidth", p));
    }
    gs.push_back(detail::parse_published<double>(parts.back(), "reduction cost", p));
  }
  if (!as.empty()) model_.alpha_shm = median(as), model_.beta_shm = median(bs);
  if (!at.empty()) model_.alpha_tcp = median(at), model_.beta_tcp = median(bt);
  model_.gamma = median(gs);
  model_.measured = true;
  KEEL_LOG_INFO("comm",
                "rank {}: cost model alpha_shm {:.2f} us, {:.2f} GB/s; alpha_tcp {:.2f} us, "
                "{:.2f} GB/s; reduce {:.2f} GB/s{}",
                rank_, model_.alpha_shm * 1e6, 1e-9 / model_.beta_shm, model_.alpha_tcp * 1e6,
                1e-9 / model_.beta_tcp, 1e-9 / model_.gamma,
                at.empty() && any_tcp_ ? " (tcp not measured: defaults)" : "");
}

void communicator::impl::abort_all(int culprit, const std::string& reason) noexcept {
  if (aborted_) return;
  aborted_ = true;
  abort_culprit_ = culprit;
  abort_reason_ = reason;
  if (shm_) shm_->abort(culprit, reason);
  detail::chunk_header h;
  h.flags = detail::k_flag_abort;
  h.peer = culprit;
  for (auto& channels : pairs_) {
    for (auto& p : channels) {
      if (p && !p->is_shm()) detail::tcp_pair_abort(*p, h);
    }
  }
}

}  // namespace keel::comm
