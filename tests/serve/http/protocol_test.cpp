#include "keel/serve/protocol.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "keel/core/config.hpp"
#include "keel/core/error.hpp"
#include "keel/core/json_value.hpp"

namespace keel::serve {
namespace {

std::string data_file(const std::string& name) {
  std::ifstream in(std::string(KEEL_SOURCE_DIR) + "/tests/data/serve/" + name, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json golden(const std::string& name) { return parse_json(data_file(name), name); }

const model_config& pair_config() {
  static const model_config c = parse_model_config(R"(
name: "pair" platform: "pytorch_libtorch" max_batch_size: 4
input { name: "tokens" data_type: TYPE_INT64 dims: [ -1 ] }
input { name: "scale" data_type: TYPE_FP32 dims: [ 2 ] }
output { name: "logits" data_type: TYPE_FP32 dims: [ -1 ] }
output { name: "mask" data_type: TYPE_BOOL dims: [ -1 ] }
)",
                                                   "pair.pbtxt");
  return c;
}

template <class T>
tensor make(dtype type, std::vector<std::int64_t> shape, const std::vector<T>& values) {
  tensor t(type, std::move(shape));
  std::memcpy(t.bytes().data(), values.data(), t.bytes().size());
  return t;
}

template <class T>
std::vector<T> values_of(const tensor& t) {
  return {t.values<T>().begin(), t.values<T>().end()};
}

bool same(const tensor& a, const tensor& b) {
  return a.type() == b.type() && a.shape() == b.shape() &&
         std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin(), b.bytes().end());
}

TEST(Protocol, DecodesATritonStyleJsonRequest) {
  const decoded_request r =
      decode_infer_request(data_file("infer_request.json"), {}, pair_config());
  EXPECT_EQ(r.id, "req-7");
  EXPECT_EQ(r.request.priority, 1u);
  EXPECT_EQ(r.request.timeout_us, 250000u);
  ASSERT_EQ(r.request.inputs.size(), 2u);  // the configuration's order, not the request's
  const tensor& tokens = r.request.inputs[0];
  EXPECT_EQ(tokens.type(), dtype::i64);
  EXPECT_EQ(tokens.shape(), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(values_of<std::int64_t>(tokens), (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));
  const tensor& scale = r.request.inputs[1];
  EXPECT_EQ(values_of<float>(scale), (std::vector<float>{0.5f, 1.5f, -2, 4}));
  ASSERT_EQ(r.outputs.size(), 2u);
  EXPECT_EQ(r.outputs[0].name, "mask");
  EXPECT_TRUE(r.outputs[0].binary);
  EXPECT_EQ(r.outputs[1].name, "logits");
  EXPECT_FALSE(r.outputs[1].binary);
}

TEST(Protocol, ResponsesCarryJsonAndBinaryOutputs) {
  const decoded_request r =
      decode_infer_request(data_file("infer_request.json"), {}, pair_config());
  const std::vector<tensor> outputs = {
      make<float>(dtype::f32, {2, 3}, {0.1f, -1, 2.5f, 1e-8f, 3e38f, 7}),
      make<std::uint8_t>(dtype::boolean, {2, 3}, {1, 0, 1, 1, 0, 0})};
  const encoded_body body = encode_infer_response(pair_config(), 3, r, outputs);
  ASSERT_TRUE(body.header_length);
  const nlohmann::json header =
      parse_json(std::string_view(body.body).substr(0, *body.header_length), "header");
  EXPECT_EQ(header["id"], "req-7");
  EXPECT_EQ(header["model_name"], "pair");
  EXPECT_EQ(header["model_version"], "3");
  ASSERT_EQ(header["outputs"].size(), 2u);
  EXPECT_EQ(header["outputs"][0]["name"], "mask");  // in the order the request named them
  EXPECT_EQ(header["outputs"][0]["datatype"], "BOOL");
  EXPECT_EQ(header["outputs"][0]["parameters"]["binary_data_size"], 6);
  EXPECT_EQ(header["outputs"][1]["data"],
            parse_json("[0.1, -1, 2.5, 1e-8, 3e38, 7]", "expected"));  // shortest float forms
  EXPECT_EQ(body.body.size(), *body.header_length + 6);

  const std::vector<named_tensor> back = decode_infer_response(body.body, body.header_length);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].name, "mask");
  EXPECT_TRUE(same(back[0].value, outputs[1]));
  EXPECT_EQ(back[1].name, "logits");
  EXPECT_TRUE(same(back[1].value, outputs[0]));

  decoded_request all;  // no outputs named: all of them, binary as binary_data_output says
  all.binary_data_output = true;
  const encoded_body binary = encode_infer_response(pair_config(), 1, all, outputs);
  EXPECT_EQ(binary.body.size(), *binary.header_length + 6 * 4 + 6);
  all.binary_data_output = false;
  EXPECT_FALSE(encode_infer_response(pair_config(), 1, all, outputs).header_length);
  EXPECT_THROW(encode_infer_response(pair_config(), 1, all, {outputs[0]}), invalid_argument);
  EXPECT_EQ(parse_json(error_json("no \"model\""), "error"),
            (nlohmann::json{{"error", "no \"model\""}}));
  EXPECT_THROW(decode_infer_response(error_json("boom"), {}), invalid_argument);
  EXPECT_EQ(parse_json(error_json("bad \xff"), "error")["error"], "bad \xef\xbf\xbd");  // U+FFFD
}

TEST(Protocol, EveryDatatypeRoundTripsAsJsonAndBinary) {
  const model_config config = parse_model_config(R"(
name: "all" platform: "pytorch_libtorch"
input { name: "b" data_type: TYPE_BOOL dims: [ 2 ] }
input { name: "u8" data_type: TYPE_UINT8 dims: [ 2 ] }
input { name: "i8" data_type: TYPE_INT8 dims: [ 2 ] }
input { name: "i16" data_type: TYPE_INT16 dims: [ 2 ] }
input { name: "i32" data_type: TYPE_INT32 dims: [ 2 ] }
input { name: "i64" data_type: TYPE_INT64 dims: [ 2 ] }
input { name: "f16" data_type: TYPE_FP16 dims: [ 3 ] }
input { name: "bf16" data_type: TYPE_BF16 dims: [ 3 ] }
input { name: "f32" data_type: TYPE_FP32 dims: [ 2 ] }
input { name: "f64" data_type: TYPE_FP64 dims: [ 2 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 2 ] }
)",
                                                 "all.pbtxt");
  const std::vector<named_tensor> inputs = {
      {"b", make<std::uint8_t>(dtype::boolean, {2}, {1, 0})},
      {"u8", make<std::uint8_t>(dtype::u8, {2}, {0, 255})},
      {"i8", make<std::int8_t>(dtype::i8, {2}, {-128, 127})},
      {"i16", make<std::int16_t>(dtype::i16, {2}, {-32768, 32767})},
      {"i32", make<std::int32_t>(dtype::i32, {2}, {-7, 1 << 30})},
      {"i64", make<std::int64_t>(dtype::i64, {2}, {INT64_MIN, INT64_MAX})},
      {"f16", make<std::uint16_t>(dtype::f16, {3}, {0x3e00, 0x7bff, 0x0001})},  // 1.5, max, min
      {"bf16", make<std::uint16_t>(dtype::bf16, {3}, {0x3fc0, 0xc2f7, 0x0001})},
      {"f32", make<float>(dtype::f32, {2}, {0.1f, -3.4e38f})},
      {"f64", make<double>(dtype::f64, {2}, {0.1, 1e-300})}};
  for (const bool binary : {true, false}) {
    const encoded_body body = encode_infer_request(inputs, binary, "x");
    EXPECT_EQ(body.header_length.has_value(), binary);
    const decoded_request r = decode_infer_request(body.body, body.header_length, config);
    EXPECT_EQ(r.id, "x");
    EXPECT_EQ(r.binary_data_output, binary);
    ASSERT_EQ(r.request.inputs.size(), inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i)
      EXPECT_TRUE(same(r.request.inputs[i], inputs[i].value)) << inputs[i].name << " " << binary;
  }
  // Numbers written as JSON round to the nearest half and bfloat16.
  const std::string json_request = R"({"inputs":[
    {"name":"b","datatype":"BOOL","shape":[2],"data":[true,false]},
    {"name":"u8","datatype":"UINT8","shape":[2],"data":[0,1]},
    {"name":"i8","datatype":"INT8","shape":[2],"data":[0,1]},
    {"name":"i16","datatype":"INT16","shape":[2],"data":[0,1]},
    {"name":"i32","datatype":"INT32","shape":[2],"data":[0,1]},
    {"name":"i64","datatype":"INT64","shape":[2],"data":[0,1]},
    {"name":"f16","datatype":"FP16","shape":[3],"data":[0.1, 65504, -2]},
    {"name":"bf16","datatype":"BF16","shape":[3],"data":[0.1, 1e38, null]},
    {"name":"f32","datatype":"FP32","shape":[2],"data":[1, 2]},
    {"name":"f64","datatype":"FP64","shape":[2],"data":[1, 2]}]})";
  const decoded_request r = decode_infer_request(json_request, {}, config);
  EXPECT_EQ(values_of<std::uint16_t>(r.request.inputs[6]),
            (std::vector<std::uint16_t>{0x2e66, 0x7bff, 0xc000}));
  const std::vector<std::uint16_t> bf16 = values_of<std::uint16_t>(r.request.inputs[7]);
  EXPECT_EQ(bf16[0], 0x3dcd);
  EXPECT_EQ(bf16[1], 0x7e96);
  EXPECT_EQ(bf16[2] & 0x7f80, 0x7f80);  // null: NaN
  EXPECT_NE(bf16[2] & 0x007f, 0);
}

TEST(Protocol, BadRequestsAreOneLineInvalidArguments) {
  const std::string tokens = R"({"name":"tokens","datatype":"INT64","shape":[1,2],"data":[1,2]})";
  const std::string scale = R"({"name":"scale","datatype":"FP32","shape":[1,2],"data":[1,2]})";
  const auto request = [](const std::string& inputs, const std::string& rest = "") {
    return R"({"inputs":[)" + inputs + "]" + rest + "}";
  };
  const std::pair<std::string, std::string> cases[] = {
      {"{", "infer request:1:2"},
      {"[]", "not an object"},
      {R"({"id":3,"inputs":[]})", "\"id\" must be a string"},
      {R"({"parameters":{"priority":-1},"inputs":[]})", "priority must be a non-negative"},
      {request(tokens), "input scale is missing"},
      {request(tokens + "," + scale + "," + tokens), "input tokens is given twice"},
      {request(tokens + "," + scale + R"(,{"name":"x","datatype":"FP32","shape":[1],"data":[1]})"),
       "model pair has no input x"},
      {request(tokens + R"(,{"name":"scale","datatype":"FP64","shape":[1,2],"data":[1,2]})"),
       "input scale: datatype FP64, the model takes FP32"},
      {request(tokens + R"(,{"name":"scale","datatype":"BYTES","shape":[1,2],"data":["a","b"]})"),
       "BYTES is not supported"},
      {request(tokens + R"(,{"name":"scale","datatype":"FP32","shape":[1,3],"data":[1,2,3]})"),
       "input scale: shape [1,3], the model takes [-1,2] with a batch of 1 to 4"},
      {request(tokens + R"(,{"name":"scale","datatype":"FP32","shape":[5,2],"data":[]})"),
       "with a batch of 1 to 4"},
      {request(tokens + R"(,{"name":"scale","datatype":"FP32","shape":[2],"data":[1,2]})"),
       "shape [2], the model takes [-1,2]"},
      {request(R"({"name":"tokens","datatype":"INT64","shape":[2,2],"data":[1,2,3,4]},)" + scale),
       "input scale has a batch of 1, input tokens of 2"},
      {request(tokens + R"(,{"name":"scale","datatype":"FP32","shape":[1,2],"data":[1]})"),
       "input scale: 1 values for shape [1,2] (2 elements)"},
      {request(tokens + R"(,{"name":"scale","datatype":"FP32","shape":[1,2],"data":[[1,2],[3]]})"),
       "more values than its shape's 2 elements"},
      {request(tokens + R"(,{"name":"scale","datatype":"FP32","shape":[1,2],"data":[1,"2"]})"),
       "input scale: value 1 is \"2\", not a number"},
      {request(tokens + R"(,{"name":"scale","datatype":"FP32","shape":[1,2],"data":[1,")" +
               std::string(1000, 'x') + R"("]})"),
       "value 1 is \"xxxx"},  // cut short
      {request(R"({"name":"tokens","datatype":"INT64","shape":[1,2],"data":[1,2.5]},)" + scale),
       "input tokens: value 1 is 2.5, not an integer"},
      {request(
           R"({"name":"tokens","datatype":"INT64","shape":[1,2],"data":[1,9223372036854775808]},)" +
           scale),
       "out of range"},
      {request(R"({"name":"tokens","datatype":"INT64","shape":[1,4000000000],"data":[]},)" + scale),
       "more elements than the body has bytes"},
      {request(tokens + "," + scale, R"(,"outputs":[{"name":"nope"}])"),
       "model pair has no output nope"},
      {request(tokens + "," + scale, R"(,"outputs":[{"name":"mask"},{"name":"mask"}])"),
       "output mask is requested twice"},
  };
  for (const auto& [body, message] : cases) {
    try {
      decode_infer_request(body, {}, pair_config());
      ADD_FAILURE() << "accepted " << body;
    } catch (const invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos)
          << e.what() << "\n  expected: " << message;
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      EXPECT_LT(std::string(e.what()).size(), 200u) << e.what();
    }
  }
}

TEST(Protocol, BinaryBodiesMustAddUp) {
  const std::vector<named_tensor> inputs = {
      {"tokens", make<std::int64_t>(dtype::i64, {1, 2}, {1, 2})},
      {"scale", make<float>(dtype::f32, {1, 2}, {1, 2})}};
  const encoded_body good = encode_infer_request(inputs, true);
  const std::size_t header = *good.header_length;
  EXPECT_NO_THROW(decode_infer_request(good.body, header, pair_config()));
  const auto fails = [&](const std::string& body, std::optional<std::size_t> length,
                         const std::string& message) {
    try {
      decode_infer_request(body, length, pair_config());
      ADD_FAILURE() << "accepted a body of " << body.size() << " bytes";
    } catch (const invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  fails(good.body + "x", header,
        "25 bytes of binary data follow the JSON header, but the inputs take 24");
  fails(good.body.substr(0, good.body.size() - 1), header, "runs past the body");
  fails(good.body, good.body.size() + 1, "is past the end of the");
  fails(good.body, {}, "infer request:1:");  // binary bytes read as JSON
  std::string wrong_size = good.body;
  const std::size_t at = wrong_size.find("\"binary_data_size\":16");
  ASSERT_NE(at, std::string::npos);
  wrong_size.replace(at, 21, "\"binary_data_size\":15");
  fails(wrong_size, header,
        "binary_data_size 15, but a INT64 tensor of shape [1,2] takes 16 bytes");
}

TEST(Protocol, LargeJsonTensorsDecodeQuickly) {
  const model_config config = parse_model_config(R"(
name: "big" platform: "pytorch_libtorch" max_batch_size: 1
input { name: "x" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 1 ] }
)",
                                                 "big.pbtxt");
  tensor x(dtype::f32, {1, 3, 224, 224});
  float v = 0;
  for (float& e : x.values<float>()) e = (v += 0.25f);
  const encoded_body body = encode_infer_request({{"x", x}}, false);
  const auto start = std::chrono::steady_clock::now();
  const decoded_request r = decode_infer_request(body.body, {}, config);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(same(r.request.inputs.at(0), x));
  EXPECT_LT(seconds, 2.0) << "150k floats took " << seconds << " s";  // ~0.03 s in a release build
}

TEST(Protocol, MetadataAndConfigurationMatchTriton) {
  const nlohmann::json server = server_metadata_json();
  EXPECT_EQ(server["name"], "keel");
  EXPECT_EQ(server["version"], KEEL_VERSION_STRING);
  EXPECT_NE(
      std::find(server["extensions"].begin(), server["extensions"].end(), "binary_tensor_data"),
      server["extensions"].end());
  const model_config c =
      read_model_config(std::string(KEEL_SOURCE_DIR) + "/tests/data/serve/triton_style.pbtxt");
  EXPECT_EQ(model_metadata_json(c, {1, 2}), golden("triton_style_metadata.json"));
  EXPECT_EQ(model_config_json(c), golden("triton_style_config.json"));

  const model_config ensemble = parse_model_config(R"(
name: "pipeline" platform: "ensemble"
input { name: "IMAGE" data_type: TYPE_UINT8 dims: [ -1, 3 ] }
output { name: "TOPK" data_type: TYPE_INT64 dims: [ 5 ] }
ensemble_scheduling {
  step { model_name: "resnet18" model_version: -1
         input_map { key: "INPUT__0" value: "IMAGE" } output_map { key: "OUTPUT__0" value: "TOPK" } }
}
)",
                                                   "pipeline.pbtxt");
  const nlohmann::json meta = model_metadata_json(ensemble, {1});
  EXPECT_EQ(meta["platform"], "ensemble");
  EXPECT_EQ(meta["inputs"][0]["shape"], parse_json("[-1, 3]", "shape"));  // no batch dimension
  const nlohmann::json config = model_config_json(ensemble);
  EXPECT_FALSE(config.contains("instance_group"));
  EXPECT_FALSE(config.contains("dynamic_batching"));
  EXPECT_EQ(config["ensemble_scheduling"], parse_json(R"({"step": [{"model_name": "resnet18",
      "model_version": -1, "input_map": {"INPUT__0": "IMAGE"},
      "output_map": {"OUTPUT__0": "TOPK"}}]})",
                                                      "steps"));
}

std::vector<model_report> reports() {
  model_report ok;
  ok.name = "resnet18";
  ok.version = 2;
  ok.state = model_state::ready;
  ok.resident = true;
  ok.resident_bytes = 46800000;
  ok.loads = 3;
  ok.load_us = 250000;
  ok.evictions = 2;
  ok.last_inference_ms = 1700000000123;
  ok.stats = {.success = 10,
              .failure = 2,
              .inference_count = 14,
              .execution_count = 6,
              .queue_us = 50,
              .compute_us = 700,
              .request_us = 900,
              .pending = 1};
  model_report broken;
  broken.name = "broken";
  broken.state = model_state::unavailable;
  broken.reason = "broken/config.pbtxt:1:1: bad";
  return {ok, broken};
}

TEST(Protocol, StatisticsIndexAndMetricsMatchTriton) {
  EXPECT_EQ(statistics_json(reports()), golden("statistics.json"));
  EXPECT_EQ(repository_index_json(reports()), parse_json(R"([
      {"name": "resnet18", "version": "2", "state": "READY"},
      {"name": "broken", "state": "UNAVAILABLE", "reason": "broken/config.pbtxt:1:1: bad"}])",
                                                         "index"));
  EXPECT_EQ(prometheus_metrics(reports(), 4, 1 << 30, 46800000), data_file("metrics.txt"));

  std::vector<model_report> odd = reports();
  odd[0].name = "a\"b\\c\nd";
  const std::string text = prometheus_metrics(odd, 1, 0, 0);
  EXPECT_NE(text.find(R"(nv_inference_count{model="a\"b\\c\nd",version="2"} 14)"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace keel::serve
