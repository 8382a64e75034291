#include "keel/serve/http_server.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <malloc.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/serve/protocol.hpp"

namespace keel::serve {
namespace {

constexpr const char* k_json = "application/json";

using clock = std::chrono::steady_clock;

// When the request this thread handles had its headers read (httplib handles a request on
// one thread from headers to response).
thread_local clock::time_point t_received;

void send_json(httplib::Response& res, const nlohmann::json& document) {
  res.set_content(document.dump(), k_json);
}

void send_error(httplib::Response& res, int status, std::string_view message) {
  res.status = status;
  res.set_content(error_json(message), k_json);
}

// Runs a handler, answering what it throws with the protocol's error and status.
template <class Handler>
void guarded(httplib::Response& res, Handler&& handler) {
  try {
    handler();
  } catch (const model_not_found& e) {
    send_error(res, 404, e.what());
  } catch (const request_rejected& e) {
    send_error(res, 503, e.what());
  } catch (const keel::invalid_argument& e) {
    send_error(res, 400, e.what());
  } catch (const keel::parse_error& e) {
    send_error(res, 400, e.what());
  } catch (const std::bad_alloc&) {
    send_error(res, 500, "out of memory");
  } catch (const std::exception& e) {
    send_error(res, 500, e.what());
  } catch (...) {
    send_error(res, 500, "unknown error");
  }
}

std::int64_t parse_version(std::string_view text) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < 1)
    throw invalid_argument(fmt::format("'{}' is not a model version", text));
  return v;
}

std::optional<std::size_t> header_length(const httplib::Request& req) {
  if (!req.has_header(k_header_length_field)) return std::nullopt;
  return parse_header_length(req.get_header_value(k_header_length_field));
}

std::vector<std::string_view> segments(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    if (path[0] == '/') {
      path.remove_prefix(1);
      continue;
    }
    const auto end = path.find('/');
    out.push_back(path.substr(0, end));
    path = end == std::string_view::npos ? std::string_view{} : path.substr(end);
  }
  return out;
}

// /v2/models/NAME[/versions/V][/ACTION]: the parts, or nullopt for another shape.
struct model_path {
  std::string name;
  std::int64_t version = -1;
  std::string_view action;  // "", "ready", "config", "stats", "infer"
};

std::optional<model_path> parse_model_path(const std::vector<std::string_view>& s) {
  if (s.size() < 3 || s[0] != "v2" || s[1] != "models") return std::nullopt;
  model_path p;
  p.name = std::string(s[2]);
  std::size_t at = 3;
  if (s.size() >= 5 && s[3] == "versions") {
    p.version = parse_version(s[4]);
    at = 5;
  }
  if (s.size() == at + 1)
    p.action = s[at];
  else if (s.size() != at)
    return std::nullopt;
  return p;
}

// The signals serve_until_signal waits for, blocked in the calling thread (and so in every
// thread it starts).
sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

// The server's own time per successful infer request, compute excluded (HTTP parsing and
// writing, decoding, queueing, batching): the last k_size samples, lock-free.
class overhead_samples {
 public:
  static constexpr std::size_t k_size = 1 << 16;
  void record(std::uint64_t us) noexcept {
    const std::uint64_t at = next_.fetch_add(1, std::memory_order_relaxed);
    samples_[at % k_size].store(us, std::memory_order_relaxed);
  }
  // The p-quantiles (p in [0, 1]) of the samples; empty before the first.
  std::vector<double> quantiles(std::span<const double> ps) const {
    const std::size_t n = std::min<std::uint64_t>(next_.load(), k_size);
    if (n == 0) return {};
    std::vector<std::uint64_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = samples_[i].load(std::memory_order_relaxed);
    std::sort(v.begin(), v.end());
    std::vector<double> out;
    for (const double p : ps)
      out.push_back(static_cast<double>(v[std::min(n - 1, static_cast<std::size_t>(p * n))]));
    return out;
  }

 private:
  std::atomic<std::uint64_t> next_{0};
  std::array<std::atomic<std::uint64_t>, k_size> samples_{};
};

// httplib's connection queue: a thread per connection being served, started on demand up to
// `max` and kept for the next one. httplib serves a keep-alive connection on one thread until
// it closes, so a fixed pool smaller than the clients would leave the extra connections
// unserved until they time out; this one grows with them.
class connection_pool final : public httplib::TaskQueue {
 public:
  explicit connection_pool(std::size_t max) : max_(max) {}
  ~connection_pool() override { connection_pool::shutdown(); }
  connection_pool(const connection_pool&) = delete;
  connection_pool& operator=(const connection_pool&) = delete;

  void enqueue(std::function<void()> job) override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(job));
      if (idle_ < jobs_.size() && threads_.size() < max_) {
        threads_.emplace_back([this] { work(); });
        return;
      }
    }
    ready_.notify_one();
  }

  // Serves what is queued, then joins every thread.
  void shutdown() override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ++idle_;
        ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        --idle_;
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  const std::size_t max_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  std::size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace

class http_server::impl {
 public:
  impl(server& models, http_options options) : models_(models), options_(std::move(options)) {
    configure(http_);
    const auto get = [this](const httplib::Request& req, httplib::Response& res) {
      handle(res, [&] { get_route(req, res); });
    };
    const auto post = [this](const httplib::Request& req, httplib::Response& res) {
      handle(res, [&] { post_route(req, res); });
    };
    http_.Get(R"(/v2(/.*)?)", get);
    http_.Post(R"(/v2/.*)", post);
    // Called once the request's headers are read, before its body: the start of the server's
    // time for it. A POST without a body (curl -X POST .../repository/index) has no
    // Content-Length, which the library would refuse: it is routed here.
    http_.set_pre_routing_handler([post](const httplib::Request& req, httplib::Response& res) {
      t_received = clock::now();
      if (req.method != "POST" || req.has_header("Content-Length") ||
          req.has_header("Transfer-Encoding"))
        return httplib::Server::HandlerResponse::Unhandled;
      post(req, res);
      return httplib::Server::HandlerResponse::Handled;
    });
    port_ = bind(http_, options_.port, "HTTP");
    if (options_.metrics_port >= 0) {
      configure(metrics_);
      metrics_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        guarded(res, [&] {
          res.set_content(prometheus_metrics(models_.models(), models_.threads(),
                                             models_.memory_budget(), models_.resident_bytes()) +
                              overhead_summary(),
                          "text/plain; version=0.0.4");
        });
      });
      metrics_port_ = bind(metrics_, options_.metrics_port, "metrics");
    }
    listen(http_);
    if (metrics_port_ >= 0) listen(metrics_);
  }

  ~impl() { stop(); }

  void stop() {
    draining_ = true;
    while (in_flight_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    http_.stop();
    metrics_.stop();
    for (std::thread& t : listeners_)
      if (t.joinable()) t.join();
  }

  int port() const noexcept { return port_; }
  int metrics_port() const noexcept { return metrics_port_; }

 private:
  // keel_http_overhead_us: a Prometheus summary of the recent requests' server overhead.
  std::string overhead_summary() const {
    static constexpr double k_quantiles[] = {0.5, 0.9, 0.99};
    return prometheus_summary("keel_http_overhead_us",
                              "Server time per successful infer request, compute excluded "
                              "(HTTP, decoding, queue, batcher), over the last 65536 requests",
                              k_quantiles, overhead_.quantiles(k_quantiles));
  }

  // Runs s's accept loop on a thread of its own and returns once the loop runs (or has
  // ended): httplib's stop() does nothing before then, and a stop() that came too early would
  // leave the loop in accept() and the join in stop() waiting forever.
  void listen(httplib::Server& s) {
    auto ended = std::make_shared<std::atomic<bool>>(false);
    listeners_.emplace_back([&s, ended] {
      s.listen_after_bind();
      *ended = true;
    });
    while (!s.is_running() && !*ended) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }

  void configure(httplib::Server& s) const {
    const std::size_t threads = static_cast<std::size_t>(std::max(1, options_.connection_threads));
    s.new_task_queue = [threads] { return new connection_pool(threads); };
    s.set_payload_max_length(options_.max_body_bytes);
    s.set_keep_alive_max_count(1u << 30);
    s.set_tcp_nodelay(true);
    s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (!res.body.empty()) return;
      send_error(res, res.status,
                 res.status == 413   ? "request body too large"
                 : res.status == 404 ? "no such endpoint"
                                     : fmt::format("request failed with status {}", res.status));
    });
    s.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr e) {
          guarded(res, [&] { std::rethrow_exception(e); });
        });
  }

  int bind(httplib::Server& s, int port, const char* what) const {
    if (port == 0) {
      const int p = s.bind_to_any_port(options_.host);
      if (p > 0) return p;
    } else if (s.bind_to_port(options_.host, port)) {
      return port;
    }
    throw io_error(fmt::format("cannot listen for {} on {}:{}: {}", what, options_.host, port,
                               std::strerror(errno)));
  }

  // Counts the request in flight (stop() waits for it) and refuses it once draining.
  template <class F>
  void handle(httplib::Response& res, F&& f) {
    ++in_flight_;
    if (draining_)
      send_error(res, 503, "the server is shutting down");
    else
      guarded(res, f);
    --in_flight_;
  }

  void get_route(const httplib::Request& req, httplib::Response& res) {
    const std::vector<std::string_view> s = segments(req.path);
    if (s.size() == 1) return send_json(res, server_metadata_json());
    // While draining, handle() has answered 503 already.
    if (s.size() == 3 && s[1] == "health" && (s[2] == "live" || s[2] == "ready")) return;
    if (s.size() == 3 && s[1] == "models" && s[2] == "stats")
      return send_json(res, statistics_json(models_.models()));
    const auto p = parse_model_path(s);
    if (!p) throw model_not_found(fmt::format("no endpoint GET {}", req.path));
    if (p->action.empty())
      return send_json(res, model_metadata_json(*models_.config(p->name), served(*p)));
    if (p->action == "ready") {
      models_.config(p->name);  // 404 for an unknown model
      if (!models_.ready(p->name, p->version))
        send_error(res, 400, fmt::format("model '{}' is not ready", p->name));
      return;
    }
    if (p->action == "config") return send_json(res, model_config_json(*models_.config(p->name)));
    if (p->action == "stats") {
      served(*p);  // 404 for an unknown model or version
      std::vector<model_report> mine;
      for (model_report& r : models_.models())
        if (r.name == p->name && (p->version == -1 || r.version == p->version))
          mine.push_back(std::move(r));
      return send_json(res, statistics_json(mine));
    }
    throw model_not_found(fmt::format("no endpoint GET {}", req.path));
  }

  // The versions the path names: all served, or the one asked (model_not_found otherwise).
  std::vector<std::int64_t> served(const model_path& p) const {
    std::vector<std::int64_t> versions = models_.versions(p.name);
    if (p.version == -1) return versions;
    if (std::find(versions.begin(), versions.end(), p.version) == versions.end())
      throw model_not_found(fmt::format("model '{}' has no version {}", p.name, p.version));
    return {p.version};
  }

  void post_route(const httplib::Request& req, httplib::Response& res) {
    const std::vector<std::string_view> s = segments(req.path);
    if (s.size() == 3 && s[1] == "repository" && s[2] == "index")
      return send_json(res, repository_index_json(models_.models()));
    if (s.size() == 5 && s[1] == "repository" && s[2] == "models") {
      if (s[4] == "load") return models_.load(s[3]);
      if (s[4] == "unload") return models_.unload(s[3]);
    }
    const auto p = parse_model_path(s);
    if (!p || p->action != "infer")
      throw model_not_found(fmt::format("no endpoint POST {}", req.path));
    const std::shared_ptr<const model_config> config = models_.config(p->name);
    decoded_request request = decode_infer_request(req.body, header_length(req), *config);
    infer_handle h = models_.infer(p->name, p->version, std::move(request.request));
    const std::vector<tensor> outputs = h.outputs.get();
    const encoded_body body = encode_infer_response(*config, h.version, request, outputs);
    if (body.header_length) {
      res.set_header(k_header_length_field, std::to_string(*body.header_length));
      res.set_content(body.body, "application/octet-stream");
    } else {
      res.set_content(body.body, k_json);
    }
    const auto total = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - t_received).count());
    overhead_.record(total - std::min(total, h.timing->compute_us));
  }

  server& models_;
  const http_options options_;
  httplib::Server http_;
  httplib::Server metrics_;
  int port_ = -1;
  int metrics_port_ = -1;
  std::atomic<bool> draining_{false};
  std::atomic<int> in_flight_{0};
  overhead_samples overhead_;
  std::vector<std::thread> listeners_;
};

http_server::http_server(server& models, http_options options)
    : impl_(std::make_unique<impl>(models, std::move(options))) {}
http_server::~http_server() = default;
int http_server::port() const noexcept { return impl_->port(); }
int http_server::metrics_port() const noexcept { return impl_->metrics_port(); }
void http_server::stop() { impl_->stop(); }

void serve_until_signal(server_options models, const http_options& options,
                        const std::function<void(const server&, const http_server&)>& ready) {
  const sigset_t signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Request and response bodies (an image is 600 KB) are allocated and freed on many
  // connection threads, each of which would get a glibc arena of its own that keeps its peak
  // (at 4x overload, 128 connections: RSS 1.1 GB and growing); a few arenas bound that. The
  // mmap threshold stays adaptive: a fixed 128 KiB one (tried) kept the bodies mapped, but
  // also every libtorch activation, which then faulted in fresh zeroed pages on each run:
  // ResNet-18 took 61 ms a request instead of 40.
  mallopt(M_ARENA_MAX, static_cast<int>(std::max(2U, std::thread::hardware_concurrency())));
  server s(std::move(models));
  http_server http(s, options);
  ready(s, http);
  int received = 0;
  sigwait(&signals, &received);
  http.stop();
}

}  // namespace keel::serve
