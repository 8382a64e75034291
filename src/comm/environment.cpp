#include "keel/comm/environment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "keel/core/error.hpp"
#include "keel/core/log.hpp"
#include "net.hpp"
#include "parse.hpp"

namespace keel::comm {
namespace {

long number(const env_lookup& lookup, const std::string& name, long lo, long hi) {
  return detail::env_integer(name, *lookup(name), lo, hi);
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  const std::size_t comma = nodelist.find(',');
  const std::size_t bracket = nodelist.find('[');
  if (bracket == std::string::npos || (comma != std::string::npos && comma < bracket)) {
    return nodelist.substr(0, comma);
  }
  const std::string prefix = nodelist.substr(0, bracket);
  std::string first = nodelist.substr(bracket + 1);
  first = first.substr(0, first.find_first_of(",]"));
  first = first.substr(0, first.find('-'));
  return prefix + first;
}

bool launched_rank() {
  for (const char* name : {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

launch_env detect_launch_env() {
  return detect_launch_env([](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  });
}

launch_env detect_launch_env(const env_lookup& lookup) {
  launch_env env;
  constexpr long k_max = 1 << 20;
  auto has = [&](const char* name) { return lookup(name).has_value(); };
  auto read_local = [&](const char* rank_var, const char* size_var) {
    if (has(rank_var)) env.local_rank = static_cast<int>(number(lookup, rank_var, 0, k_max));
    if (has(size_var))
      env.local_size = static_cast<int>(number(lookup, size_var, 1, k_max));
    else
      env.local_size = env.size;
    if (!has(rank_var)) env.local_rank = env.rank;
  };
  if (has("RANK") && has("WORLD_SIZE")) {
    env.launcher = "torchrun";
    env.rank = static_cast<int>(number(lookup, "RANK", 0, k_max));
    env.size = static_cast<int>(number(lookup, "WORLD_SIZE", 1, k_max));
    read_local("LOCAL_RANK", "LOCAL_WORLD_SIZE");
  } else if (has("OMPI_COMM_WORLD_RANK") && has("OMPI_COMM_WORLD_SIZE")) {
    env.launcher = "openmpi";
    env.rank = static_cast<int>(number(lookup, "OMPI_COMM_WORLD_RANK", 0, k_max));
    env.size = static_cast<int>(number(lookup, "OMPI_COMM_WORLD_SIZE", 1, k_max));
    read_local("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE");
  } else if (has("PMI_RANK") && has("PMI_SIZE")) {
    env.launcher = "pmi";
    env.rank = static_cast<int>(number(lookup, "PMI_RANK", 0, k_max));
    env.size = static_cast<int>(number(lookup, "PMI_SIZE", 1, k_max));
    read_local("MPI_LOCALRANKID", "MPI_LOCALNRANKS");
  } else if (has("SLURM_PROCID") && has("SLURM_NTASKS")) {
    env.launcher = "slurm";
    env.rank = static_cast<int>(number(lookup, "SLURM_PROCID", 0, k_max));
    env.size = static_cast<int>(number(lookup, "SLURM_NTASKS", 1, k_max));
    read_local("SLURM_LOCALID", "SLURM_NTASKS_PER_NODE");
    if (auto list = lookup("SLURM_JOB_NODELIST"); list) {
      env.master_addr = first_slurm_host(*list);
    } else if (auto list2 = lookup("SLURM_NODELIST"); list2) {
      env.master_addr = first_slurm_host(*list2);
    }
  } else {
    env.launcher = "single";
  }
  if (env.rank >= env.size) {
    throw keel::invalid_argument(fmt::format("{} environment: rank {} is not below world size {}",
                                             env.launcher, env.rank, env.size));
  }
  if (auto addr = lookup("MASTER_ADDR"); addr) env.master_addr = *addr;
  if (has("MASTER_PORT")) {
    env.master_port = static_cast<std::uint16_t>(number(lookup, "MASTER_PORT", 1, 65535));
  }
  if (auto s = lookup("KEEL_COMM_STORE"); s) {
    if (s->rfind("file:", 0) != 0 || s->size() == 5) {
      throw keel::invalid_argument(
          fmt::format("KEEL_COMM_STORE='{}': expected file:DIRECTORY", *s));
    }
    env.store_dir = s->substr(5);
  }
  if (auto secret = lookup("KEEL_STORE_SECRET"); secret) {
    if (secret->size() < 16) {
      throw keel::invalid_argument(fmt::format(
          "KEEL_STORE_SECRET has {} characters: use at least 16 (e.g. 32 random hex digits), "
          "the same on every rank",
          secret->size()));
    }
    env.store_secret = *secret;
  }
  if (auto bind = lookup("KEEL_STORE_BIND"); bind) env.store_bind = *bind;
  if (auto keep = lookup("KEEL_STORE_KEEP"); keep) {
    if (*keep != "0" && *keep != "1") {
      throw keel::invalid_argument(fmt::format("KEEL_STORE_KEEP='{}': expected 0 or 1", *keep));
    }
    env.store_keep = *keep == "1";
  }
  return env;
}

std::unique_ptr<store> make_store(const launch_env& env, duration timeout) {
  if (!env.store_dir.empty()) return std::make_unique<file_store>(env.store_dir);
  if (env.size == 1) return std::make_unique<memory_store>();
  tcp_store_options o;
  o.secret = env.store_secret;
  o.bind_address = env.store_bind;
  o.max_connections = std::max<std::size_t>(1024, 2 * static_cast<std::size_t>(env.size) + 64);
  const bool host = env.rank == 0;
  if (host && o.bind_address.empty() && env.local_size < env.size &&
      net::is_loopback(env.master_addr)) {
    // Debian maps the host name to 127.0.1.1: other hosts resolve MASTER_ADDR to a real
    // address, but here it would bind loopback, which they cannot reach.
    KEEL_LOG_WARN("comm",
                  "store: MASTER_ADDR {} resolves to a loopback address on rank 0 but the job "
                  "spans hosts ({} of {} ranks here): listening on every interface (set "
                  "KEEL_STORE_BIND to this host's address to narrow it)",
                  env.master_addr, env.local_size, env.size);
    o.bind_address = "0.0.0.0";
  }
  auto s = std::make_unique<tcp_store>(env.master_addr, env.master_port, host, timeout, o);
  if (host && o.secret.empty()) {
    static std::once_flag warned;
    std::call_once(warned, [&] {
      KEEL_LOG_WARN("comm",
                    "store: KEEL_STORE_SECRET is not set: the TCP store on {}:{} lets any process "
                    "of this host join the job; set it to the same random string on every rank",
                    s->bind_address(), s->port());
    });
  }
  return s;
}

}  // namespace keel::comm
