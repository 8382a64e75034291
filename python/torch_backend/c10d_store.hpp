// keel::torch_backend::c10d_store — keel::comm::store over torch's c10d::Store, so that a
// keel communicator rendezvouses through the store torch.distributed already made (the
// TCPStore of env://, a FileStore, the PrefixStore init_process_group wraps them in).
//
// Each operation is the c10d one: set, add and check as they are; get(key, timeout) waits
// for the key (c10d::Store::wait with that timeout) and then reads it; wait(keys, timeout)
// is c10d's. torch reports a key that did not come in time as a c10::Error whose message
// says so; it becomes comm::timeout_error (collective "store", naming the key), any other
// c10d failure (the store's host is gone) comm::peer_error, so the communicator's bootstrap
// fails as it does over keel's own stores. Thread-safety: that of the c10d store (torch's
// stores may be used from several threads). The adapter holds a reference on the store.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "keel/comm/error.hpp"
#include "keel/comm/store.hpp"

namespace keel::torch_backend {

class c10d_store final : public keel::comm::store {
 public:
  explicit c10d_store(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}

  void set(const std::string& key, const keel::comm::bytes& value) override {
    guarded([&] { store_->set(key, value); }, key);
  }
  keel::comm::bytes get(const std::string& key, keel::comm::duration timeout) override {
    keel::comm::bytes out;
    guarded(
        [&] {
          store_->wait({key}, timeout);
          out = store_->get(key);
        },
        key);
    return out;
  }
  std::int64_t add(const std::string& key, std::int64_t delta) override {
    std::int64_t v = 0;
    guarded([&] { v = store_->add(key, delta); }, key);
    return v;
  }
  bool check(const std::vector<std::string>& keys) override {
    bool ok = false;
    guarded([&] { ok = store_->check(keys); }, keys.empty() ? std::string() : keys.front());
    return ok;
  }
  void wait(const std::vector<std::string>& keys, keel::comm::duration timeout) override {
    guarded([&] { store_->wait(keys, timeout); }, keys.empty() ? std::string() : keys.front());
  }

 private:
  template <class F>
  static void guarded(F&& f, const std::string& key) {
    try {
      f();
    } catch (const c10::Error& e) {
      const std::string what = e.what_without_backtrace();
      if (what.find("imeout") != std::string::npos || what.find("timed out") != std::string::npos) {
        throw keel::comm::timeout_error("store: key '" + key + "': " + what, "store", 0, -1);
      }
      throw keel::comm::peer_error("store: key '" + key + "': " + what, "store", 0, 0);
    }
  }

  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace keel::torch_backend
