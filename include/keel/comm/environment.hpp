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
// Pure functions of the environment given; thread-safe.
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
};

using env_lookup = std::function<std::optional<std::string>(const std::string&)>;

// Reads the process environment (getenv). Throws keel::invalid_argument when a variable
// holds something that is not a number in range (the message names it).
launch_env detect_launch_env();
launch_env detect_launch_env(const env_lookup& lookup);

// Expands the first host of a Slurm node list: "node[03-05,9],gpu1" -> "node03".
std::string first_slurm_host(const std::string& nodelist);

// The rendezvous store for `env`: a file_store, or a tcp_store hosted by rank 0.
std::unique_ptr<store> make_store(const launch_env& env, duration timeout);

}  // namespace keel::comm
