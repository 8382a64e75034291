// communicator bootstrap: the options from the environment, the store exchange, the
// shared-memory segments and the TCP mesh, the cost model's measurement, and abort.
#include "keel/comm/communicator.hpp"

#include <sched.h>
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
#include "transport/shm/shm_device.hpp"
#include "transport/tcp/tcp_device.hpp"

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
  {
    auto l = std::make_unique<lane>();
    l->p2p_send_seq.assign(static_cast<std::size_t>(size), 0);
    l->p2p_recv_seq.assign(static_cast<std::size_t>(size), 0);
    lane0_ = l.get();
    lanes_.emplace(0, std::move(l));
  }
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
    for (auto& d : devices_) l.devices.push_back(d.get());
    l.device_of = device_of_;
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
  progress_.reset();
  for (auto& d : devices_) d->close();
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

  // 2. Publish how to reach this rank. A rank reachable at a loopback address only (a
  //    single-host job) listens there only.
  const std::string advertised = advertised_address();
  bool loopback = false;
  try {
    loopback = net::is_loopback(advertised);
  } catch (const keel::error&) {
  }
  auto tcp = std::make_unique<detail::tcp_device>(rank_, size_, opts_.chunk_bytes,
                                                  loopback ? advertised : "0.0.0.0");
  const std::string me = opts_.host_id.empty() ? host_identity() : opts_.host_id;
  s.set_string(fmt::format("{}/info/{}", prefix, rank_),
               fmt::format("{}|{}|{}|{}", me, advertised, tcp->port(), ::getpid()));
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
  std::vector<detail::tcp_device::endpoint> remote;
  for (int p = 0; p < size_; ++p) {
    const bool same_host = hosts[p] == me;
    if (opts_.transport_kind == transport::shm && !same_host) {
      throw keel::invalid_argument(fmt::format(
          "transport shm requested but rank {} runs on another host ({})", p, hosts[p]));
    }
    const bool shm = same_host && opts_.transport_kind != transport::tcp;
    transport_of_[p] = p == rank_ ? transport::shm : (shm ? transport::shm : transport::tcp);
    if (shm) {
      local.push_back(p);
    } else {
      any_tcp_ = true;
      detail::tcp_device::endpoint e;
      e.rank = p;
      e.host = same_host ? std::string("127.0.0.1") : addrs[p];
      e.port = ports[p];
      remote.push_back(e);
    }
  }

  // 3. Shared memory among the ranks of this host.
  device_of_.assign(static_cast<std::size_t>(size_), -1);
  if (local.size() > 1) {
    detail::shm_device::config c;
    c.key_prefix = prefix;
    c.name_prefix = fmt::format("/keel-{}-{}", env("KEEL_COMM_JOB").value_or("j"), nonce_text);
    c.rank = rank_;
    c.size = size_;
    c.local_ranks = local;
    c.chunk_bytes = opts_.chunk_bytes;
    c.slots = opts_.shm_slots;
    c.fd_wake = any_tcp_;
    devices_.push_back(std::make_unique<detail::shm_device>(s, c, deadline));
    for (int p : local) {
      if (p != rank_)
        device_of_[static_cast<std::size_t>(p)] = static_cast<int>(devices_.size()) - 1;
    }
  }

  // 4. TCP to everyone else.
  if (any_tcp_) {
    tcp->connect(remote, nonce, deadline, opts_.timeout);
    devices_.push_back(std::move(tcp));
    for (const auto& e : remote) {
      device_of_[static_cast<std::size_t>(e.rank)] = static_cast<int>(devices_.size()) - 1;
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
  {
    std::lock_guard lock(abort_mutex_);
    if (aborted_) return;
    abort_culprit_ = culprit;
    abort_reason_ = reason;
    aborted_ = true;
  }
  for (auto& d : devices_) d->abort(culprit, reason);
}

}  // namespace keel::comm
