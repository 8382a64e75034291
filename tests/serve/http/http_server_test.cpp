#include "keel/serve/http_server.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstring>
#include <future>
#include <string>
#include <thread>

#include "keel/core/json_value.hpp"
#include "keel/serve/protocol.hpp"
#include "scaler_model.hpp"

namespace keel::serve {
namespace {

class Http : public testing::repository_test {
 protected:
  void SetUp() override {
    repository_test::SetUp();
    model("m", "scale 2");
    model("slow", "scale 3 delay_ms 150",
          "dynamic_batching { default_queue_policy { max_queue_size: 1 } }");
  }
  void serve(http_options o = {}) {
    o.port = 0;
    o.metrics_port = 0;
    models_ = start();
    http_ = std::make_unique<http_server>(*models_, o);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", http_->port());
  }
  // The response's status and JSON body.
  std::pair<int, json_value> get(const std::string& path) const {
    const auto r = client_->Get(path.c_str());
    if (!r) return {0, {}};
    return {r->status, r->body.empty() ? json_value{} : parse_json(r->body, path)};
  }
  std::pair<int, json_value> post(const std::string& path, const std::string& body) const {
    const auto r = client_->Post(path.c_str(), body, "application/json");
    if (!r) return {0, {}};
    return {r->status, r->body.empty() ? json_value{} : parse_json(r->body, path)};
  }
  static std::string infer_json(const std::string& data, const std::string& shape = "[1,2]",
                                const std::string& type = "FP32") {
    return R"({"id":"r1","inputs":[{"name":"x","shape":)" + shape + R"(,"datatype":")" + type +
           R"(","data":)" + data + "}]}";
  }
  std::unique_ptr<server> models_;
  std::unique_ptr<http_server> http_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(Http, HealthMetadataConfigAndReadiness) {
  serve();
  EXPECT_EQ(get("/v2/health/live").first, 200);
  EXPECT_EQ(get("/v2/health/ready").first, 200);
  const auto [status, meta] = get("/v2");
  EXPECT_EQ(status, 200);
  EXPECT_EQ(meta.at("name"), "keel");
  const auto [s2, model_meta] = get("/v2/models/m");
  EXPECT_EQ(s2, 200);
  EXPECT_EQ(model_meta.at("name"), "m");
  EXPECT_EQ(model_meta.at("inputs").at(0).at("shape"), json_value::parse("[-1,2]"));
  EXPECT_EQ(get("/v2/models/m/versions/1").first, 200);
  EXPECT_EQ(get("/v2/models/m/versions/9").first, 404);
  EXPECT_EQ(get("/v2/models/m/ready").first, 200);
  EXPECT_EQ(get("/v2/models/m/versions/1/ready").first, 200);
  EXPECT_EQ(get("/v2/models/m/config").second.at("max_batch_size"), 4);
  const auto [s3, missing] = get("/v2/models/nothing");
  EXPECT_EQ(s3, 404);
  EXPECT_TRUE(missing.contains("error"));
  EXPECT_EQ(get("/v2/nowhere").first, 404);
  EXPECT_EQ(get("/elsewhere").first, 404);
}

TEST_F(Http, InferWithJsonTensors) {
  serve();
  const auto [status, body] = post("/v2/models/m/infer", infer_json("[1.5, -2]"));
  ASSERT_EQ(status, 200) << body.dump();
  EXPECT_EQ(body.at("model_name"), "m");
  EXPECT_EQ(body.at("id"), "r1");
  const json_value& out = body.at("outputs").at(0);
  EXPECT_EQ(out.at("name"), "y");
  EXPECT_EQ(out.at("datatype"), "FP32");
  EXPECT_EQ(out.at("shape"), json_value::parse("[1,2]"));
  EXPECT_EQ(out.at("data"), json_value::parse("[3.0,-4.0]"));
  EXPECT_EQ(post("/v2/models/m/versions/1/infer", infer_json("[1, 1]")).first, 200);
}

TEST_F(Http, InferWithTheBinaryExtension) {
  serve();
  tensor x(dtype::f32, {2, 2});
  const float v[] = {1, 2, 3, 4};
  std::memcpy(x.bytes().data(), v, sizeof v);
  const encoded_body request = encode_infer_request({{"x", x}}, true);
  ASSERT_TRUE(request.header_length);
  httplib::Headers headers = {
      {"Inference-Header-Content-Length", std::to_string(*request.header_length)}};
  const auto r =
      client_->Post("/v2/models/m/infer", headers, request.body, "application/octet-stream");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::optional<std::size_t> length;
  if (r->has_header("Inference-Header-Content-Length"))
    length = std::stoul(r->get_header_value("Inference-Header-Content-Length"));
  const std::vector<named_tensor> out = decode_infer_response(r->body, length);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].value.shape(), (std::vector<std::int64_t>{2, 2}));
  const auto y = out[0].value.values<float>();
  EXPECT_EQ(std::vector<float>(y.begin(), y.end()), (std::vector<float>{2, 4, 6, 8}));
}

TEST_F(Http, BadRequestsGetTheProtocolsErrorAndA4xxStatus) {
  http_options o;
  o.max_body_bytes = 4096;
  serve(o);
  const struct {
    std::string path, body;
    int status;
  } cases[] = {
      {"/v2/models/m/infer", "{not json", 400},
      {"/v2/models/m/infer", infer_json("[1, 2, 3]", "[1,3]"), 400},
      {"/v2/models/m/infer", infer_json("[1, 2]", "[1,2]", "INT64"), 400},
      {"/v2/models/m/infer", infer_json("[1]"), 400},
      {"/v2/models/m/infer", infer_json("[1, 2]", "[9,2]"), 400},
      {"/v2/models/m/infer", R"({"inputs":[]})", 400},
      {"/v2/models/nothing/infer", infer_json("[1, 2]"), 404},
      {"/v2/models/m/versions/4/infer", infer_json("[1, 2]"), 404},
      {"/v2/models/m/versions/x/infer", infer_json("[1, 2]"), 400},
      {"/v2/models/m/infer", std::string(5000, ' '), 413},
      {"/v2/models/m/explode", "{}", 404},
  };
  for (const auto& c : cases) {
    const auto r = client_->Post(c.path.c_str(), c.body, "application/json");
    ASSERT_TRUE(r) << c.path;
    EXPECT_EQ(r->status, c.status) << c.path << " " << c.body.substr(0, 80);
    const json_value error = parse_json(r->body, "response");
    EXPECT_TRUE(error.contains("error")) << r->body;
  }
  // A bad binary header length.
  httplib::Headers headers = {{"Inference-Header-Content-Length", "99999"}};
  const auto r = client_->Post("/v2/models/m/infer", headers, infer_json("[1, 2]"),
                               "application/octet-stream");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  // The server still serves.
  EXPECT_EQ(post("/v2/models/m/infer", infer_json("[1, 2]")).first, 200);
}

TEST_F(Http, AFullQueueAnswers503AtOnce) {
  serve();
  const std::string body = infer_json("[1, 2]");
  // One runs, one waits in the queue (max_queue_size 1): the third is refused.
  auto first = std::async(std::launch::async, [&] {
    httplib::Client c("127.0.0.1", http_->port());
    return c.Post("/v2/models/slow/infer", body, "application/json")->status;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  auto second = std::async(std::launch::async, [&] {
    httplib::Client c("127.0.0.1", http_->port());
    return c.Post("/v2/models/slow/infer", body, "application/json")->status;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  const auto t0 = std::chrono::steady_clock::now();
  const auto [status, error] = post("/v2/models/slow/infer", body);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
  EXPECT_EQ(status, 503);
  EXPECT_NE(error.at("error").get<std::string>().find("queue full"), std::string::npos);
  EXPECT_EQ(first.get(), 200);
  EXPECT_EQ(second.get(), 200);
}

TEST_F(Http, StatisticsIndexMetricsAndRepositoryControl) {
  serve();
  ASSERT_EQ(post("/v2/models/m/infer", infer_json("[1, 2]")).first, 200);
  const auto [s1, stats] = get("/v2/models/m/stats");
  ASSERT_EQ(s1, 200);
  const json_value& m = stats.at("model_stats").at(0);
  EXPECT_EQ(m.at("name"), "m");
  EXPECT_EQ(m.at("inference_stats").at("success").at("count"), 1);
  EXPECT_EQ(get("/v2/models/stats").second.at("model_stats").size(), 2u);
  const auto [s2, index] = post("/v2/repository/index", "{}");
  ASSERT_EQ(s2, 200);
  EXPECT_EQ(index.size(), 2u);
  EXPECT_EQ(index.at(0).at("state"), "READY");
  httplib::Client metrics("127.0.0.1", http_->metrics_port());
  const auto text = metrics.Get("/metrics");
  ASSERT_TRUE(text);
  EXPECT_NE(text->body.find("nv_inference_request_success{model=\"m\",version=\"1\"} 1"),
            std::string::npos)
      << text->body;
  EXPECT_EQ(post("/v2/repository/models/m/unload", "{}").first, 200);
  EXPECT_EQ(post("/v2/models/m/infer", infer_json("[1, 2]")).first, 503);
  EXPECT_EQ(get("/v2/models/m/ready").first, 400);
  EXPECT_EQ(post("/v2/repository/models/m/load", "{}").first, 200);
  EXPECT_EQ(post("/v2/models/m/infer", infer_json("[1, 2]")).first, 200);
  EXPECT_EQ(post("/v2/repository/models/ghost/load", "{}").first, 404);
}

TEST_F(Http, StopAnswersRequestsInFlight) {
  serve();
  auto slow = std::async(std::launch::async, [&] {
    httplib::Client c("127.0.0.1", http_->port());
    const auto r = c.Post("/v2/models/slow/infer", infer_json("[1, 2]"), "application/json");
    return r ? r->status : 0;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  http_->stop();
  EXPECT_EQ(slow.get(), 200);
  EXPECT_FALSE(client_->Get("/v2/health/live"));  // closed
}

}  // namespace
}  // namespace keel::serve
