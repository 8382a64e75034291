#include "keel/serve/model_config.hpp"

#include <gtest/gtest.h>

#include <string>

#include "keel/core/error.hpp"

namespace keel::serve {
namespace {

TEST(ModelConfig, ReadsATritonStyleFile) {
  const model_config c =
      read_model_config(std::string(KEEL_SOURCE_DIR) + "/tests/data/serve/triton_style.pbtxt");
  EXPECT_EQ(c.name, "resnet18");
  EXPECT_EQ(c.platform, model_platform::torchscript);
  EXPECT_EQ(c.max_batch_size, 8);
  ASSERT_EQ(c.inputs.size(), 1u);
  EXPECT_EQ(c.inputs[0].name, "INPUT__0");
  EXPECT_EQ(c.inputs[0].type, dtype::f32);
  EXPECT_EQ(c.inputs[0].dims, (std::vector<std::int64_t>{3, 224, 224}));
  ASSERT_EQ(c.outputs.size(), 1u);
  EXPECT_EQ(c.outputs[0].dims, (std::vector<std::int64_t>{1000}));
  EXPECT_EQ(c.instance_count, 3);  // 2 + a group without count (1)
  ASSERT_TRUE(c.has_dynamic_batching);
  EXPECT_EQ(c.batching.preferred_batch_sizes, (std::vector<int>{4, 8}));
  EXPECT_EQ(c.batching.max_queue_delay_us, 500u);
  EXPECT_EQ(c.batching.priority_levels, 2u);
  EXPECT_EQ(c.batching.default_priority_level, 2u);
  EXPECT_EQ(c.batching.default_policy.max_queue_size, 64u);
  EXPECT_EQ(c.batching.default_policy.default_timeout_us, 100000u);
  ASSERT_EQ(c.batching.priority_policies.count(1), 1u);
  EXPECT_TRUE(c.batching.priority_policies.at(1).delay_on_timeout);
  EXPECT_TRUE(c.batching.priority_policies.at(1).allow_timeout_override);
  ASSERT_EQ(c.warmup.size(), 1u);
  EXPECT_EQ(c.warmup[0].batch_size, 4u);
  EXPECT_EQ(c.warmup[0].inputs.at("INPUT__0").data, warmup_input::source::zero);
  EXPECT_EQ(c.versions.choice, version_policy::kind::latest);
  EXPECT_EQ(c.versions.latest_count, 2u);
  EXPECT_EQ(c.default_model_filename, "model.pt");
}

TEST(ModelConfig, ReadsAnEnsemble) {
  const model_config c = parse_model_config(R"(
name: "pipeline"
platform: "ensemble"
max_batch_size: 4
input { name: "IMAGE" data_type: TYPE_UINT8 dims: [ -1, -1, 3 ] }
output { name: "TOPK" data_type: TYPE_INT64 dims: [ 5 ] }
ensemble_scheduling {
  step { model_name: "preprocess" model_version: -1
         input_map { key: "RAW" value: "IMAGE" } output_map { key: "PIXELS" value: "pixels" } }
  step { model_name: "resnet18" model_version: 1
         input_map { key: "INPUT__0" value: "pixels" } output_map { key: "OUTPUT__0" value: "TOPK" } }
}
)",
                                            "pipeline.pbtxt");
  EXPECT_EQ(c.platform, model_platform::ensemble);
  EXPECT_EQ(c.inputs[0].dims, (std::vector<std::int64_t>{-1, -1, 3}));
  EXPECT_EQ(c.inputs[0].type, dtype::u8);
  ASSERT_EQ(c.ensemble.size(), 2u);
  EXPECT_EQ(c.ensemble[0].model_name, "preprocess");
  EXPECT_EQ(c.ensemble[0].model_version, -1);
  EXPECT_EQ(c.ensemble[0].input_map.at("RAW"), "IMAGE");
  EXPECT_EQ(c.ensemble[1].output_map.at("OUTPUT__0"), "TOPK");
}

TEST(ModelConfig, BackendPytorchIsTheTorchScriptPlatform) {
  const model_config c = parse_model_config(
      "name: \"m\" backend: \"pytorch\" input { name: \"x\" data_type: TYPE_FP64 dims: 4 }"
      " output { name: \"y\" data_type: TYPE_BOOL dims: 4 }",
      "m.pbtxt");
  EXPECT_EQ(c.platform, model_platform::torchscript);
  EXPECT_EQ(c.inputs[0].type, dtype::f64);
  EXPECT_EQ(c.outputs[0].type, dtype::boolean);
  EXPECT_EQ(c.max_batch_size, 0);
  EXPECT_FALSE(c.has_dynamic_batching);
}

std::string error_of(const std::string& text) {
  try {
    parse_model_config(text, "config.pbtxt");
  } catch (const parse_error& e) {
    return e.what();
  }
  return "(no error)";
}

constexpr const char* k_io =
    "input { name: \"x\" data_type: TYPE_FP32 dims: [ 4 ] }\n"
    "output { name: \"y\" data_type: TYPE_FP32 dims: [ 4 ] }\n";

TEST(ModelConfig, ErrorsNameTheFileLineAndField) {
  const std::string head = "name: \"m\"\nplatform: \"pytorch_libtorch\"\n";
  // Syntax and unknown fields: protobuf's own message, at the place.
  EXPECT_EQ(error_of(head + k_io + "optimization { }\n"),
            "config.pbtxt:5:14: Message type \"keel.serve.pb.ModelConfig\" has no field named "
            "\"optimization\".");
  EXPECT_EQ(error_of(head + "max_batch_size: \"eight\"\n"),
            "config.pbtxt:3:17: Expected integer, got: \"eight\"");
  EXPECT_EQ(error_of(head + "input { name: \"x\" data_type: TYPE_FLOAT }\n"),
            "config.pbtxt:3:41: Unknown enumeration value of \"TYPE_FLOAT\" for field "
            "\"data_type\".");
  // Values the server cannot honour: the field's line.
  EXPECT_EQ(error_of(head + k_io + "instance_group { kind: KIND_GPU }\n"),
            "config.pbtxt:5:18: kind: KIND_GPU: this server runs models on the CPU (use "
            "KIND_CPU)");
  EXPECT_EQ(error_of(head + k_io + "dynamic_batching { }\n"),
            "config.pbtxt:5:1: dynamic_batching: needs max_batch_size > 0 (the model must take a "
            "batch)");
  EXPECT_EQ(error_of(head + "max_batch_size: 4\n" + k_io +
                     "dynamic_batching { preferred_batch_size: [ 2, 16 ] }\n"),
            "config.pbtxt:6:20: preferred_batch_size: 16 is outside 1..max_batch_size (4)");
  EXPECT_EQ(error_of(head + "input { name: \"x\" data_type: TYPE_STRING dims: 1 }\n"),
            "config.pbtxt:3:19: data_type: TYPE_STRING is not supported: TorchScript models "
            "here take numeric tensors");
  EXPECT_EQ(error_of(head + "input { name: \"x\" data_type: TYPE_FP32 dims: [ 3, 0 ] }\n"),
            "config.pbtxt:3:40: dims: extent 0 must be positive or -1 (any)");
  EXPECT_EQ(error_of("name: \"m\"\nplatform: \"tensorrt_plan\"\n"),
            "config.pbtxt:2:1: platform: 'tensorrt_plan' is not served here: expected "
            "pytorch_libtorch or ensemble");
  EXPECT_EQ(error_of("platform: \"ensemble\"\n"), "config.pbtxt: name: the model needs a name");
  EXPECT_EQ(error_of(head + k_io + "input { name: \"x\" data_type: TYPE_FP32 dims: 1 }\n"),
            "config.pbtxt:5:1: input: 'x' is declared twice");
  EXPECT_EQ(error_of(head + k_io + "model_warmup { name: \"w\" batch_size: 2 }\n"),
            "config.pbtxt:5:26: batch_size: 2 exceeds max_batch_size (0)");
  EXPECT_EQ(error_of("name: \"e\"\nplatform: \"ensemble\"\n" + std::string(k_io)),
            "config.pbtxt:2:1: platform: an ensemble needs ensemble_scheduling");
}

TEST(ModelConfig, HostileTextIsAnErrorNotACrash) {
  for (const std::string text :
       {std::string(), std::string("name: \"m\" input {"), std::string(100000, '{'),
        std::string("\x00\xff\xfe", 3), std::string("max_batch_size: 99999999999999999999")}) {
    EXPECT_THROW(parse_model_config(text, "x.pbtxt"), parse_error);
  }
}

}  // namespace
}  // namespace keel::serve
