// keel::comm errors — what a collective throws when a peer is missing, late or disagrees.
//
// Every error names the collective (e.g. "allreduce"), its sequence number on this
// communicator (the n-th collective call, counted from 1) and the rank it concerns, so that a
// log line from every rank points at the same call and the same culprit (the PyTorch
// watchdog's convention). After any of these errors the communicator is aborted: further
// calls throw peer_error at once. Error objects are immutable and safe to copy.
#pragma once

#include <cstdint>
#include <string>

#include "keel/core/error.hpp"

namespace keel::comm {

// Base of the classes below: the collective, its sequence number and the rank concerned
// (-1 when no single rank is to blame).
class comm_error : public keel::detail::error_of<std::runtime_error> {
 public:
  comm_error(const std::string& message, std::string collective, std::uint64_t seq, int rank)
      : error_of(message), collective_(std::move(collective)), seq_(seq), rank_(rank) {}
  const std::string& collective() const noexcept { return collective_; }
  std::uint64_t seq() const noexcept { return seq_; }
  int rank() const noexcept { return rank_; }

 private:
  std::string collective_;
  std::uint64_t seq_ = 0;
  int rank_ = -1;
};

// A wait ran past its deadline; rank() is the peer whose data or buffer space never came.
// Also thrown by stores when a key did not appear in time (collective "store", seq 0).
class timeout_error : public comm_error {
 public:
  using comm_error::comm_error;
};

// A peer died (its process exited, its socket closed) or aborted after an error of its own;
// rank() is the rank that is missing.
class peer_error : public comm_error {
 public:
  using comm_error::comm_error;
};

// A peer called a different collective, dtype, reduction or size at the same sequence
// number; the message names both calls. rank() is the disagreeing peer.
class mismatch_error : public comm_error {
 public:
  using comm_error::comm_error;
};

// The rendezvous store refused this rank's credentials (KEEL_STORE_SECRET differs, or is
// set on some ranks only), or the process answering at the store's address could not prove
// that it knows the job's secret (not this job's store). Collective "store", seq 0, rank()
// 0 (the store's host). Retrying does not help: the configuration is wrong.
class auth_error : public comm_error {
 public:
  using comm_error::comm_error;
};

}  // namespace keel::comm
