// keel::comm::communicator — collectives among `size` ranks (processes or threads).
//
// Construction is collective: every rank constructs its communicator with the same store,
// the same size and its own rank. The constructor publishes how to reach this rank,
// connects a pair to every peer through a transport's device — POSIX shared-memory rings
// for peers on the same host (options::host_id), TCP sockets otherwise — and measures the
// cost model's latency and bandwidth (alpha, beta per transport; gamma, the reduction cost
// per byte); all ranks then agree on the medians, so `auto` picks the same algorithm
// everywhere. After the constructor returns the store is no longer used.
//
// Collectives work on contiguous buffers of `count` elements (see types.hpp); in == out is
// allowed (in-place) for allreduce, reduce and broadcast; reduce_scatter and allgather are
// in-place when the small buffer is the rank's slice of the large one, as in NCCL. count 0
// returns at once. Every call is blocking and has a deadline (options.timeout or the call's
// own): when it passes the call throws timeout_error naming the collective, its sequence
// number and the rank it was waiting for; a dead or aborted peer raises peer_error; a peer
// that called a different collective, dtype, reduction, algorithm or size raises
// mismatch_error. After any error the communicator is aborted: peers are told at once (shm
// flag + futex wake, TCP abort chunk) so they fail fast, and later calls throw peer_error.
//
// Thread-safety: calls on different tags (call_options::tag) may come from different threads
// at once; calls on one tag one at a time (a second call on a tag in flight throws
// keel::invalid_argument). One thread drives every call in flight while the others wait.
// Different communicators are independent. Shared-memory segments are unlinked as soon
// as every local rank has mapped them, so a crash leaves nothing behind in /dev/shm.
//
// Environment: KEEL_COMM_ALGO (auto or an algorithm name; per-call options win),
// KEEL_COMM_TRANSPORT (auto, shm, tcp), KEEL_COMM_TIMEOUT (seconds), KEEL_COMM_CHUNK (bytes,
// e.g. 256K), KEEL_COMM_SPIN_US / KEEL_COMM_YIELD_US (the idle policy's busy-poll and yield
// periods, integers in [0, 60000000]; read by the constructor, which throws
// keel::invalid_argument naming the variable on anything else), KEEL_LOG=info prints each
// algorithm choice with the model's estimates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "keel/comm/error.hpp"
#include "keel/comm/store.hpp"
#include "keel/comm/types.hpp"
#include "keel/core/bytes.hpp"

namespace keel::comm {

struct options {
  duration timeout = std::chrono::seconds(60);
  transport transport_kind = transport::auto_select;
  algorithm algo = algorithm::auto_select;
  std::size_t chunk_bytes = 256 * k_kib;  // pipelining unit and shm slot size (multiple of 64)
  int shm_slots = 4;                      // slots per shm ring (per peer, per channel)
  int reducer_rank = 0;                   // the aggregation rank of algorithm::reducer
  bool tune = true;                       // measure alpha/beta/gamma at init (else defaults)
  std::string name;                       // store key prefix; default "keel/comm/<n>"
  // This rank's host, as far as transports go: ranks with the same id use shared memory.
  // Empty: the host name and the kernel's boot id. (Tests make one machine look like two.)
  std::string host_id;
  // Reads KEEL_COMM_ALGO, KEEL_COMM_TRANSPORT, KEEL_COMM_TIMEOUT, KEEL_COMM_CHUNK into a copy
  // of `base`. Throws keel::invalid_argument naming the variable on a bad value.
  static options from_env(options base);
  static options from_env() { return from_env(options{}); }
};

// Per call. `tag` (gloo's): the calls in flight at once on a communicator need different
// tags, and every rank uses the same tag for the same call. Each tag is a sequence of its
// own: calls on one tag are matched between ranks in the order they are made, calls on
// different tags independently of each other, so several threads may run collectives (or
// send/recv) at the same time, each on its own tag.
struct call_options {
  algorithm algo = algorithm::auto_select;  // auto: KEEL_COMM_ALGO / options.algo / model
  duration timeout{0};                      // 0: the communicator's
  std::uint32_t tag = 0;
};

// Alpha-beta-gamma costs (seconds, seconds per byte) the `auto` choice uses.
struct cost_model {
  double alpha_shm = 2e-6, beta_shm = 1.0 / 4e9;
  double alpha_tcp = 30e-6, beta_tcp = 1.0 / 1e9;
  double gamma = 1.0 / 4e9;  // reducing one byte (read two, write one)
  bool measured = false;
};

struct choice {
  algorithm algo = algorithm::ring;
  std::string why;  // one line: the estimates of every candidate, or the override
};

class communicator {
 public:
  // Collective. Throws timeout_error/peer_error when peers do not show up in time,
  // keel::invalid_argument for rank/size out of range.
  communicator(store& rendezvous, int rank, int size, options opts = {});
  ~communicator();
  communicator(const communicator&) = delete;
  communicator& operator=(const communicator&) = delete;

  // The launcher's environment (environment.hpp) and a store made for it; the communicator
  // owns the store. options::from_env is applied to `opts`.
  static std::unique_ptr<communicator> from_env(options opts = {});

  int rank() const noexcept;
  int size() const noexcept;
  // Collectives issued so far on tag 0 (the sequence number of the last one); each tag
  // counts its own. Read it from the thread that uses tag 0.
  std::uint64_t seq() const noexcept;
  transport transport_to(int peer) const;
  const cost_model& model() const noexcept;
  // What `auto` (or an override) picks for a collective of `bytes` bytes, and why.
  choice choose(collective c, std::size_t bytes,
                algorithm requested = algorithm::auto_select) const;

  void allreduce(const void* in, void* out, std::size_t count, dtype t, reduce_op op,
                 call_options o = {});
  // out significant on root only (may be nullptr elsewhere).
  void reduce(const void* in, void* out, std::size_t count, dtype t, reduce_op op, int root,
              call_options o = {});
  // in significant on root only; every rank's out receives root's data.
  void broadcast(const void* in, void* out, std::size_t count, dtype t, int root,
                 call_options o = {});
  // in: size*count elements; out: count elements (block `rank` of the reduction).
  void reduce_scatter(const void* in, void* out, std::size_t count, dtype t, reduce_op op,
                      call_options o = {});
  // in: count elements; out: size*count, block r from rank r.
  void allgather(const void* in, void* out, std::size_t count, dtype t, call_options o = {});
  // in, out: size*count elements; block p of in goes to rank p, block p of out came from p.
  void alltoall(const void* in, void* out, std::size_t count, dtype t, call_options o = {});
  // Point to point, ordered with the collectives on the same pair.
  void send(const void* in, std::size_t count, dtype t, int peer, call_options o = {});
  void recv(void* out, std::size_t count, dtype t, int peer, call_options o = {});
  void barrier(call_options o = {});

  class impl;

 private:
  std::unique_ptr<store> owned_store_;
  std::unique_ptr<impl> impl_;
};

}  // namespace keel::comm
