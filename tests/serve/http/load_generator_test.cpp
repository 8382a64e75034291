#include "keel/serve/load_generator.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/serve/protocol.hpp"

namespace keel::serve {
namespace {

// A KServe v2 server for the client to measure: metadata, configuration, statistics and infer
// requests answered with the protocol codec; each output echoes the model's input.
class test_server {
 public:
  explicit test_server(bool with_stats) {
    add("echo_f32", R"(name: "echo_f32" platform: "pytorch_libtorch" max_batch_size: 8
input { name: "x" data_type: TYPE_FP32 dims: [ 3 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 3 ] })");
    add("echo_i64", R"(name: "echo_i64" platform: "pytorch_libtorch"
input { name: "ids" data_type: TYPE_INT64 dims: [ -1, 2 ] }
output { name: "out" data_type: TYPE_INT64 dims: [ -1, 2 ] })");
    add("broken", R"(name: "broken" platform: "pytorch_libtorch"
input { name: "x" data_type: TYPE_FP16 dims: [ 1 ] }
output { name: "y" data_type: TYPE_FP16 dims: [ 1 ] })");
    const auto model = [this](const httplib::Request& req,
                              httplib::Response& res) -> model_config* {
      const auto it = models_.find(req.matches[1]);
      if (it != models_.end()) return &it->second;
      res.status = 404;
      res.set_content(error_json("no model " + std::string(req.matches[1])), "application/json");
      return nullptr;
    };
    svr_.Get(R"(/v2/models/([^/]+))", [=](const httplib::Request& req, httplib::Response& res) {
      if (const model_config* c = model(req, res))
        res.set_content(model_metadata_json(*c, {1}).dump(), "application/json");
    });
    svr_.Get(R"(/v2/models/([^/]+)/config)",
             [=](const httplib::Request& req, httplib::Response& res) {
               if (const model_config* c = model(req, res))
                 res.set_content(model_config_json(*c).dump(), "application/json");
             });
    if (with_stats)
      svr_.Get(R"(/v2/models/([^/]+)/stats)",
               [=, this](const httplib::Request& req, httplib::Response& res) {
                 if (const model_config* c = model(req, res)) {
                   model_report r;
                   r.name = c->name;
                   r.version = 1;
                   std::lock_guard lock(mutex_);
                   r.stats.success = answered_[c->name];
                   r.stats.queue_us = 10 * r.stats.success;
                   r.stats.compute_us = 30 * r.stats.success;
                   res.set_content(statistics_json({r}).dump(), "application/json");
                 }
               });
    svr_.Post(R"(/v2/models/([^/]+)/infer)", [=, this](const httplib::Request& req,
                                                       httplib::Response& res) {
      model_config* c = model(req, res);
      if (c == nullptr) return;
      try {
        if (c->name == "broken") throw invalid_argument("model broken: boom");
        std::optional<std::size_t> length;
        if (req.has_header("Inference-Header-Content-Length"))
          length = std::stoull(req.get_header_value("Inference-Header-Content-Length"));
        const decoded_request r = decode_infer_request(req.body, length, *c);
        const encoded_body body = encode_infer_response(*c, 1, r, r.request.inputs);
        if (body.header_length)
          res.set_header("Inference-Header-Content-Length", std::to_string(*body.header_length));
        res.set_content(body.body, "application/octet-stream");
        std::lock_guard lock(mutex_);
        ++answered_[c->name];
        shapes_[c->name] = r.request.inputs[0].shape();
      } catch (const invalid_argument& e) {
        res.status = 400;
        res.set_content(error_json(e.what()), "application/json");
      }
    });
    svr_.set_keep_alive_max_count(1 << 20);
    svr_.set_tcp_nodelay(true);
    port_ = svr_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    while (!svr_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~test_server() {
    svr_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::uint64_t answered(const std::string& model) {
    std::lock_guard lock(mutex_);
    return answered_[model];
  }
  std::vector<std::int64_t> shape(const std::string& model) {
    std::lock_guard lock(mutex_);
    return shapes_[model];
  }

 private:
  void add(const std::string& name, const std::string& text) {
    models_.emplace(name, parse_model_config(text, name + ".pbtxt"));
  }

  std::map<std::string, model_config> models_;
  std::mutex mutex_;
  std::map<std::string, std::uint64_t> answered_;
  std::map<std::string, std::vector<std::int64_t>> shapes_;
  httplib::Server svr_;
  int port_ = 0;
  std::thread thread_;
};

bench_options quick(const std::string& url, std::vector<std::string> models) {
  bench_options o;
  o.url = url;
  o.models = std::move(models);
  o.duration_s = 0.3;
  o.warmup_s = 0.1;
  return o;
}

TEST(LoadGenerator, OptionsAreChecked) {
  const auto rejects = [](auto change) {
    bench_options o = quick("http://127.0.0.1:1", {"m"});
    change(o);
    EXPECT_THROW(run_bench(o), invalid_argument);
  };
  rejects([](bench_options& o) { o.url = "127.0.0.1:8000"; });
  rejects([](bench_options& o) { o.url = "http://"; });
  rejects([](bench_options& o) { o.url = "http://127.0.0.1:8000/v2"; });
  rejects([](bench_options& o) { o.models = {}; });
  rejects([](bench_options& o) { o.models = {"a", ""}; });
  rejects([](bench_options& o) { o.models = {"a", "b", "a"}; });
  rejects([](bench_options& o) { o.concurrency = {}; });
  rejects([](bench_options& o) { o.concurrency = {1, 0}; });
  rejects([](bench_options& o) { o.concurrency = {100000}; });
  rejects([](bench_options& o) { o.rate = -1; });
  rejects([](bench_options& o) { o.rate = NAN; });
  rejects([](bench_options& o) { o.duration_s = 0; });
  rejects([](bench_options& o) { o.warmup_s = -1; });
  rejects([](bench_options& o) { o.batch = 0; });
  rejects([](bench_options& o) { o.shapes["x"] = {2, -1}; });
}

TEST(LoadGenerator, PercentilesAreNearestRank) {
  std::vector<double> ten;
  for (int i = 1; i <= 10; ++i) ten.push_back(i);
  EXPECT_EQ(percentile(ten, 50), 5);
  EXPECT_EQ(percentile(ten, 90), 9);
  EXPECT_EQ(percentile(ten, 99), 10);
  EXPECT_EQ(percentile(ten, 100), 10);
  EXPECT_EQ(percentile(ten, 1), 1);
  std::vector<double> hundred;
  for (int i = 1; i <= 100; ++i) hundred.push_back(i);
  EXPECT_EQ(percentile(hundred, 99), 99);
  EXPECT_EQ(percentile(std::vector<double>{7}, 50), 7);
  EXPECT_EQ(percentile({}, 50), 0);
}

TEST(LoadGenerator, AnUnreachableServerIsAnIoError) {
  // A port nothing listens on: bound and closed again.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ::close(fd);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  try {
    run_bench(quick(url, {"m"}));
    ADD_FAILURE() << "no error";
  } catch (const io_error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot reach " + url + ": could not connect");
  }
}

TEST(LoadGenerator, MeasuresAServerClosedLoop) {
  test_server server(true);
  bench_options o = quick(server.url(), {"echo_f32", "echo_i64"});
  o.concurrency = {1, 3};
  o.batch = 2;
  o.shapes["ids"] = {5, 2};
  const bench_report report = run_bench(o);
  ASSERT_EQ(report.levels.size(), 2u);
  for (const bench_level& l : report.levels) {
    EXPECT_GT(l.requests, 0u);
    EXPECT_EQ(l.errors, 0u) << l.first_error;
    EXPECT_NEAR(l.throughput_rps, static_cast<double>(l.requests) / o.duration_s, 1e-9);
    EXPECT_LE(l.p50_us, l.p90_us);
    EXPECT_LE(l.p90_us, l.p99_us);
    EXPECT_GT(l.mean_us, 0);
    ASSERT_TRUE(l.server_queue_us && l.server_compute_us);
    EXPECT_NEAR(*l.server_queue_us, 10, 1e-9);
    EXPECT_NEAR(*l.server_compute_us, 30, 1e-9);
  }
  EXPECT_GT(server.answered("echo_i64"), 0u);  // concurrency 3: clients 0 and 2 on echo_f32
  EXPECT_EQ(server.shape("echo_f32"), (std::vector<std::int64_t>{2, 3}));  // batch rows
  EXPECT_EQ(server.shape("echo_i64"), (std::vector<std::int64_t>{5, 2}));  // no batching

  const nlohmann::json j = to_json(report);
  EXPECT_EQ(j["url"], server.url());
  EXPECT_EQ(j["levels"].size(), 2u);
  EXPECT_EQ(j["levels"][1]["concurrency"], 3);
  EXPECT_TRUE(j["levels"][1].contains("server_queue_us"));
  EXPECT_FALSE(j["levels"][1].contains("first_error"));
  const std::string text = to_text(report);
  EXPECT_NE(text.find("Concurrency: 3, throughput: "), std::string::npos) << text;
  EXPECT_NE(text.find("server queue 10 us, compute 30 us"), std::string::npos) << text;

  o.binary = false;  // JSON tensors both ways
  o.concurrency = {2};
  const bench_report json_report = run_bench(o);
  EXPECT_GT(json_report.levels.at(0).requests, 0u);
  EXPECT_EQ(json_report.levels.at(0).errors, 0u) << json_report.levels.at(0).first_error;
}

TEST(LoadGenerator, OpenLoopKeepsToTheRateWithoutServerStatistics) {
  test_server server(false);
  bench_options o = quick(server.url(), {"echo_f32"});
  o.concurrency = {2};
  o.rate = 100;
  o.duration_s = 0.5;
  const bench_report report = run_bench(o);
  const bench_level& l = report.levels.at(0);
  EXPECT_EQ(l.rate, 100);
  EXPECT_LE(l.requests, 52u);  // 100/s for 0.5 s, give or take the window's edges
  EXPECT_GE(l.requests, 10u);
  EXPECT_EQ(l.errors, 0u) << l.first_error;
  EXPECT_FALSE(l.server_queue_us);
  EXPECT_FALSE(to_json(report).at("levels").at(0).contains("server_queue_us"));
}

TEST(LoadGenerator, RequestErrorsAreCountedAndModelErrorsThrown) {
  test_server server(true);
  const bench_level l = run_bench(quick(server.url(), {"broken"})).levels.at(0);
  EXPECT_EQ(l.requests, 0u);
  EXPECT_GT(l.errors, 0u);
  EXPECT_EQ(l.first_error, "HTTP 400: model broken: boom");
  EXPECT_NE(to_text({server.url(), {"broken"}, {l}}).find("errors: "), std::string::npos);

  EXPECT_THROW(run_bench(quick(server.url(), {"missing"})), invalid_argument);
  bench_options too_big = quick(server.url(), {"echo_f32"});
  too_big.batch = 9;
  EXPECT_THROW(run_bench(too_big), invalid_argument);
  bench_options misfit = quick(server.url(), {"echo_f32"});
  misfit.shapes["x"] = {4};
  EXPECT_THROW(run_bench(misfit), invalid_argument);
}

}  // namespace
}  // namespace keel::serve
