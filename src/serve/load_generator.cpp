#include "keel/serve/load_generator.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>

#include "keel/core/error.hpp"
#include "keel/core/json_value.hpp"
#include "keel/serve/protocol.hpp"

namespace keel::serve {
namespace {

using json = nlohmann::json;
using clock = std::chrono::steady_clock;

constexpr int k_max_concurrency = 4096;

template <class... A>
[[noreturn]] void fail(fmt::format_string<A...> format, A&&... args) {
  throw invalid_argument(fmt::format(format, std::forward<A>(args)...));
}

void check_options(const bench_options& o) {
  const std::string_view scheme = "http://";
  if (!o.url.starts_with(scheme) || o.url.size() == scheme.size() ||
      o.url.find('/', scheme.size()) != std::string::npos)
    fail("bench url '{}': expected http://HOST:PORT", o.url);
  if (o.models.empty()) fail("bench: no model given");
  for (const std::string& m : o.models) {
    if (m.empty()) fail("bench: an empty model name");
    if (std::count(o.models.begin(), o.models.end(), m) > 1)
      fail("bench: model {} is given twice", m);
  }
  if (o.concurrency.empty()) fail("bench: no concurrency level given");
  for (const int c : o.concurrency)
    if (c < 1 || c > k_max_concurrency)
      fail("bench concurrency {}: expected 1 to {}", c, k_max_concurrency);
  if (!std::isfinite(o.rate) || o.rate < 0)
    fail("bench rate {}: expected requests per second >= 0 (0: closed loop)", o.rate);
  if (!std::isfinite(o.duration_s) || o.duration_s <= 0)
    fail("bench duration {} s: expected a positive number of seconds", o.duration_s);
  if (!std::isfinite(o.warmup_s) || o.warmup_s < 0)
    fail("bench warmup {} s: expected a number of seconds >= 0", o.warmup_s);
  if (o.batch < 1) fail("bench batch {}: expected 1 or more rows", o.batch);
  for (const auto& [input, dims] : o.shapes)
    if (std::any_of(dims.begin(), dims.end(), [](std::int64_t d) { return d < 0; }))
      fail("bench shape of {}: {} has a negative extent", input, shape_string(dims));
}

httplib::Client connect(const std::string& url) {
  httplib::Client c(url);
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);  // headers and body go out as separate writes: no Nagle delay
  c.set_connection_timeout(std::chrono::seconds(5));
  c.set_read_timeout(std::chrono::seconds(60));
  return c;
}

std::string describe(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection: return "could not connect";
    case httplib::Error::ConnectionTimeout: return "the connection timed out";
    case httplib::Error::Read: return "the connection closed or timed out while reading";
    case httplib::Error::Write: return "the connection closed while writing";
    default: return httplib::to_string(e);
  }
}

// The "error" of an error response, else its body's first line.
std::string error_message(const std::string& body) {
  try {
    const json j = parse_json(body, "response");
    if (const auto it = j.find("error"); it != j.end() && it->is_string()) return *it;
  } catch (const std::exception&) {  // not JSON: the text itself
  }
  return body.substr(0, body.find('\n'));
}

json get_json(httplib::Client& c, const bench_options& o, const std::string& model,
              const std::string& path) {
  const httplib::Result res = c.Get(path);
  if (!res) throw io_error(fmt::format("cannot reach {}: {}", o.url, describe(res.error())));
  if (res->status != 200)
    fail("model {}: GET {} answered {}: {}", model, path, res->status, error_message(res->body));
  try {
    return parse_json(res->body, path);
  } catch (const parse_error& e) {
    fail("model {}: {}", model, e.what());
  }
}

// The shape to send for `input`, whose metadata shape is `shape`.
std::vector<std::int64_t> input_shape(const bench_options& o, const std::string& input,
                                      std::vector<std::int64_t> shape, int max_batch_size) {
  const std::size_t skip = max_batch_size > 0 ? 1 : 0;
  if (shape.size() < skip) fail("input {} has no batch dimension", input);
  if (const auto it = o.shapes.find(input); it != o.shapes.end()) {
    const std::vector<std::int64_t>& dims = it->second;
    if (dims.size() != shape.size() - skip ||
        !std::equal(dims.begin(), dims.end(), shape.begin() + static_cast<std::ptrdiff_t>(skip),
                    [](std::int64_t d, std::int64_t m) { return m == -1 || d == m; }))
      fail("shape {} for input {} does not fit {}", shape_string(dims), input, shape_string(shape));
    std::copy(dims.begin(), dims.end(), shape.begin() + static_cast<std::ptrdiff_t>(skip));
  }
  if (skip == 1) shape[0] = o.batch;
  for (std::int64_t& d : shape) d = std::max<std::int64_t>(d, 1);
  return shape;
}

struct target {
  std::string model;
  std::string path;  // /v2/models/NAME/infer
  encoded_body request;
};

// Reads the model's metadata and configuration and encodes one request for it.
target prepare(httplib::Client& c, const bench_options& o, const std::string& model,
               std::mt19937_64& rng) {
  const std::string base = "/v2/models/" + model;
  const json metadata = get_json(c, o, model, base);
  const httplib::Result config = c.Get(base + "/config");
  std::vector<named_tensor> inputs;
  try {
    int max_batch_size = 0;
    if (config && config->status == 200)
      max_batch_size = parse_json(config->body, base + "/config").value("max_batch_size", 0);
    if (max_batch_size > 0 && o.batch > max_batch_size)
      fail("batches of up to {} rows, not {}", max_batch_size, o.batch);
    for (const json& in : metadata.at("inputs")) {
      std::string name = in.at("name").get<std::string>();
      const dtype type =
          parse_dtype(in.at("datatype").get<std::string>(), k_tensor_dtypes, dtype_style::triton);
      tensor t(type, input_shape(o, name, in.at("shape").get<std::vector<std::int64_t>>(),
                                 max_batch_size));
      fill_random(t, rng);
      inputs.push_back({std::move(name), std::move(t)});
    }
  } catch (const json::exception& e) {
    fail("model {}: unexpected metadata: {}", model, e.what());
  } catch (const keel::error& e) {
    fail("model {}: {}", model, e.what());
  }
  return {model, base + "/infer", encode_infer_request(inputs, o.binary)};
}

// The reason a response is not a good answer, empty when it is one.
std::string check_response(const httplib::Result& res) {
  if (!res) return fmt::format("HTTP: {}", describe(res.error()));
  if (res->status != 200) return fmt::format("HTTP {}: {}", res->status, error_message(res->body));
  try {
    std::optional<std::size_t> header_length;
    if (res->has_header(k_header_length_field))
      header_length = parse_header_length(res->get_header_value(k_header_length_field));
    decode_infer_response(res->body, header_length);
  } catch (const keel::error& e) {
    return e.what();
  }
  return {};
}

struct window {
  clock::time_point start, measure, end;
  double rate = 0;
};

struct client_result {
  std::vector<double> latency_us, error_latency_us;
  std::uint64_t errors = 0;
  std::string first_error;
};

void run_client(const std::string& url, const target& t, const window& w,
                std::atomic<std::uint64_t>& next_due, client_result& out) {
  httplib::Client c = connect(url);
  httplib::Headers headers;
  if (t.request.header_length)
    headers.emplace(k_header_length_field, std::to_string(*t.request.header_length));
  const char* content_type =
      t.request.header_length ? "application/octet-stream" : "application/json";
  const std::chrono::duration<double> interval(w.rate > 0 ? 1 / w.rate : 0);
  for (;;) {
    const clock::time_point due =
        w.rate > 0 ? w.start + std::chrono::duration_cast<clock::duration>(
                                   interval * static_cast<double>(next_due.fetch_add(1)))
                   : clock::now();
    if (std::max(due, clock::now()) >= w.end) return;  // nothing is sent after the window
    std::this_thread::sleep_until(due);
    const httplib::Result res = c.Post(t.path, headers, t.request.body, content_type);
    const clock::time_point done = clock::now();
    if (done < w.measure || done >= w.end) continue;
    const double us = std::chrono::duration<double, std::micro>(done - due).count();
    if (std::string error = check_response(res); error.empty()) {
      out.latency_us.push_back(us);
    } else {
      out.error_latency_us.push_back(us);
      if (out.errors++ == 0) out.first_error = std::move(error);
    }
  }
}

struct server_sample {
  std::uint64_t success = 0, queue_ns = 0, compute_ns = 0;
};

// The statistics of every model summed; empty when the server does not answer them.
std::optional<server_sample> sample_stats(httplib::Client& c, const std::vector<target>& targets) {
  server_sample s;
  try {
    for (const target& t : targets) {
      const httplib::Result res = c.Get("/v2/models/" + t.model + "/stats");
      if (!res || res->status != 200) return std::nullopt;
      const json stats = parse_json(res->body, "stats");
      for (const json& m : stats.at("model_stats")) {
        const json& st = m.at("inference_stats");
        const auto ns = [&](const char* key) { return st.at(key).at("ns").get<std::uint64_t>(); };
        s.success += st.at("success").at("count").get<std::uint64_t>();
        s.queue_ns += ns("queue");
        s.compute_ns += ns("compute_input") + ns("compute_infer") + ns("compute_output");
      }
    }
  } catch (const std::exception&) {  // not Triton's statistics format
    return std::nullopt;
  }
  return s;
}

bench_level run_level(const bench_options& o, const std::vector<target>& targets,
                      httplib::Client& control, int concurrency) {
  const auto seconds = [](double s) {
    return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(s));
  };
  window w;
  w.start = clock::now();
  w.measure = w.start + seconds(o.warmup_s);
  w.end = w.measure + seconds(o.duration_s);
  w.rate = o.rate;
  std::atomic<std::uint64_t> next_due{0};
  std::vector<client_result> results(static_cast<std::size_t>(concurrency));
  std::optional<server_sample> before, after;
  {
    std::vector<std::jthread> clients;
    for (std::size_t i = 0; i < results.size(); ++i)
      clients.emplace_back(run_client, std::cref(o.url), std::cref(targets[i % targets.size()]),
                           std::cref(w), std::ref(next_due), std::ref(results[i]));
    std::this_thread::sleep_until(w.measure);
    before = sample_stats(control, targets);
    std::this_thread::sleep_until(w.end);
    after = sample_stats(control, targets);
  }
  bench_level level;
  level.concurrency = concurrency;
  level.rate = o.rate;
  std::vector<double> latency, error_latency;
  for (client_result& r : results) {
    latency.insert(latency.end(), r.latency_us.begin(), r.latency_us.end());
    error_latency.insert(error_latency.end(), r.error_latency_us.begin(), r.error_latency_us.end());
    if (level.errors == 0 && r.errors > 0) level.first_error = std::move(r.first_error);
    level.errors += r.errors;
  }
  std::sort(latency.begin(), latency.end());
  level.requests = latency.size();
  level.throughput_rps = static_cast<double>(latency.size()) / o.duration_s;
  level.p50_us = percentile(latency, 50);
  level.p90_us = percentile(latency, 90);
  level.p99_us = percentile(latency, 99);
  std::sort(error_latency.begin(), error_latency.end());
  level.error_p50_us = percentile(error_latency, 50);
  level.error_p99_us = percentile(error_latency, 99);
  if (!latency.empty())
    level.mean_us =
        std::accumulate(latency.begin(), latency.end(), 0.0) / static_cast<double>(latency.size());
  // A server restarted inside the window (counters reset) has no delta to report.
  if (before && after && after->success > before->success && after->queue_ns >= before->queue_ns &&
      after->compute_ns >= before->compute_ns) {
    const double n = static_cast<double>(after->success - before->success);
    level.server_queue_us = static_cast<double>(after->queue_ns - before->queue_ns) / n / 1e3;
    level.server_compute_us = static_cast<double>(after->compute_ns - before->compute_ns) / n / 1e3;
  }
  return level;
}

}  // namespace

double percentile(std::span<const double> sorted, double p) {
  if (sorted.empty()) return 0;
  const double n = static_cast<double>(sorted.size());
  const double rank = std::clamp(std::ceil(p / 100 * n), 1.0, n);
  return sorted[static_cast<std::size_t>(rank) - 1];
}

bench_report run_bench(const bench_options& options) {
  check_options(options);
  httplib::Client control = connect(options.url);
  std::mt19937_64 rng(options.seed);
  std::vector<target> targets;
  for (const std::string& model : options.models)
    targets.push_back(prepare(control, options, model, rng));
  bench_report report{options.url, options.models, {}};
  for (const int c : options.concurrency)
    report.levels.push_back(run_level(options, targets, control, c));
  return report;
}

nlohmann::json to_json(const bench_report& report) {
  json levels = json::array();
  for (const bench_level& l : report.levels) {
    json j = {{"concurrency", l.concurrency},
              {"rate", l.rate},
              {"requests", l.requests},
              {"errors", l.errors},
              {"throughput_rps", l.throughput_rps},
              {"p50_us", l.p50_us},
              {"p90_us", l.p90_us},
              {"p99_us", l.p99_us},
              {"mean_us", l.mean_us}};
    if (l.errors > 0) {
      j["first_error"] = l.first_error;
      j["error_p50_us"] = l.error_p50_us;
      j["error_p99_us"] = l.error_p99_us;
    }
    if (l.server_queue_us) j["server_queue_us"] = *l.server_queue_us;
    if (l.server_compute_us) j["server_compute_us"] = *l.server_compute_us;
    levels.push_back(std::move(j));
  }
  return {{"url", report.url}, {"models", report.models}, {"levels", std::move(levels)}};
}

std::string to_text(const bench_report& report) {
  std::string out =
      fmt::format("Server: {}, models: {}\n", report.url, fmt::join(report.models, ", "));
  for (const bench_level& l : report.levels) {
    out += fmt::format("Concurrency: {}", l.concurrency);
    if (l.rate > 0) out += fmt::format(", request rate: {:g}/s", l.rate);
    out += fmt::format(
        ", throughput: {:.1f} req/s, latency p50 {:.0f} us, p90 {:.0f} us, p99 {:.0f} us, "
        "avg {:.0f} us",
        l.throughput_rps, l.p50_us, l.p90_us, l.p99_us, l.mean_us);
    if (l.server_queue_us && l.server_compute_us)
      out += fmt::format("; server queue {:.0f} us, compute {:.0f} us", *l.server_queue_us,
                         *l.server_compute_us);
    out += '\n';
    if (l.errors > 0)
      out += fmt::format("  errors: {}, answered in p50 {:.0f} us, p99 {:.0f} us (first: {})\n",
                         l.errors, l.error_p50_us, l.error_p99_us, l.first_error);
  }
  return out;
}

}  // namespace keel::serve
