// Where a rank learns who it is: the environment variables of the launchers people use.
//
// detect() looks, in this order, at
//   torchrun / env://  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
//                      (also what `keel comm launch` sets)
//   Open MPI           OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE
//   MPICH / PMI        PMI_RANK, PMI_SIZE (MPI_LOCALRANKID, MPI_LOCALNRANKS when set)
//   Slurm              SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE,
//                      master = the first host of SLURM_JOB_NODELIST (or SLURM_NODELIST)
// MASTER_ADDR and MASTER_PORT override the master under every launcher; the defaults are
// 127.0.0.1 and 29500 (torch's). KEEL_COMM_STORE=file:DIR selects a file store instead of
// the TCP store. Without any of these, the process is rank 0 of 1 ("single").
//
// The TCP store (docs/comm.md, "Security of the bootstrap"):
//   KEEL_STORE_SECRET  the job's secret, the same on every rank, at least 16 characters;
//                      `keel comm launch` (and bench/verify -N) make one when it is unset.
//                      Without it rank 0's store only listens on a loopback address (and
//                      warns once that any local process can join); a store that would be
//                      reachable from other hosts refuses to start.
//   KEEL_STORE_BIND    the address rank 0's store listens on (default: MASTER_ADDR's, or
//                      every interface when MASTER_ADDR resolves to loopback on rank 0 but
//                      the job spans hosts, LOCAL_WORLD_SIZE < WORLD_SIZE).
//   KEEL_STORE_KEEP=1  keep listening after bootstrap (default: communicator::from_env
//                      closes the listening socket once every rank is connected).
// detect_launch_env and first_slurm_host are pure functions of their input; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "keel/comm/store.hpp"

namespace keel::comm {

struct launch_env {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = 29500;
  std::string store_dir;     // non-empty: use a file_store in this directory
  std::string launcher;      // "torchrun", "openmpi", "pmi", "slurm" or "single"
  std::string store_secret;  // KEEL_STORE_SECRET ("" when unset)
  std::string store_bind;    // KEEL_STORE_BIND ("" when unset)
  bool store_keep = false;   // KEEL_STORE_KEEP=1
};

using env_lookup = std::function<std::optional<std::string>(const std::string&)>;

// Reads the process environment (getenv). Throws keel::invalid_argument when a variable
// holds something that is not a number in range (the message names it).
launch_env detect_launch_env();
launch_env detect_launch_env(const env_lookup& lookup);

// True when this process runs as a rank of a launched job: RANK (torchrun, `keel comm
// launch`), OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID is set, even to "". `keel comm
// verify` and `bench -N` re-launch themselves only when this is false.
bool launched_rank();

// Expands the first host of a Slurm node list: "node[03-05,9],gpu1" -> "node03".
std::string first_slurm_host(const std::string& nodelist);

// The rendezvous store for `env`: a file_store, or a tcp_store hosted by rank 0 with the
// secret, bind address and a connection limit (max(1024, 2 * size + 64)) taken from `env`.
// Throws what tcp_store's constructor throws.
std::unique_ptr<store> make_store(const launch_env& env, duration timeout);

}  // namespace keel::comm
