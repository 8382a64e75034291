#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "keel/core/error.hpp"
#include "keel/serve/model.hpp"

namespace keel::serve {
namespace {

namespace fs = std::filesystem;

// The models of make_test_models.py, written once per test program.
const fs::path& models() {
  static const fs::path dir = [] {
    const fs::path d =
        fs::temp_directory_path() / ("keel-serve-models-" + std::to_string(::getpid()));
    const std::string cmd = std::string(KEEL_PYTHON) + " " + KEEL_SOURCE_DIR +
                            "/tests/serve/backends/make_test_models.py " + d.string();
    if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "could not run " << cmd;
    return d;
  }();
  return dir;
}

model_config config(const std::string& text) { return parse_model_config(text, "test.pbtxt"); }

const char* k_affine = R"(name: "affine" platform: "pytorch_libtorch" max_batch_size: 8
input { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] }
output { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 3 ] })";

TEST(TorchScript, RunsABatchAsTheModelComputesIt) {
  auto m = load_torchscript(models() / "affine.pt", config(k_affine));
  EXPECT_EQ(m->resident_bytes(), (12u + 3u) * 4u);
  tensor x(dtype::f32, {2, 4});
  for (int i = 0; i < 8; ++i)
    x.values<float>()[static_cast<std::size_t>(i)] = static_cast<float>(i);
  const std::vector<tensor> in = {x};
  const std::vector<tensor> out = m->run(in, 1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<std::int64_t>{2, 3}));
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 3; ++j) {
      double want = j;
      for (int i = 0; i < 4; ++i) want += (r * 4 + i) * (i - j / 8.0);
      EXPECT_NEAR(out[0].values<float>()[static_cast<std::size_t>(r * 3 + j)], want, 1e-4);
    }
}

TEST(TorchScript, BindsInputsAndDictOutputsByName) {
  // Config order differs from forward(pixels, scale): names decide.
  auto m =
      load_torchscript(models() / "named.pt", config(R"(name: "named" platform: "pytorch_libtorch"
input { name: "scale" data_type: TYPE_FP32 dims: [ 1 ] }
input { name: "pixels" data_type: TYPE_FP32 dims: [ 2, 3 ] }
output { name: "max" data_type: TYPE_FP32 dims: [ 2 ] }
output { name: "sum" data_type: TYPE_FP32 dims: [ 2 ] })"));
  tensor scale(dtype::f32, {1});
  scale.values<float>()[0] = 2;
  tensor pixels(dtype::f32, {2, 3});
  const float p[] = {1, 5, 3, 4, 2, 6};
  std::copy(std::begin(p), std::end(p), pixels.values<float>().begin());
  const std::vector<tensor> in = {scale, pixels};
  const std::vector<tensor> out = m->run(in, 2);
  ASSERT_EQ(out.size(), 2u);
  const std::vector<float> max(out[0].values<float>().begin(), out[0].values<float>().end());
  const std::vector<float> sum(out[1].values<float>().begin(), out[1].values<float>().end());
  EXPECT_EQ(max, (std::vector<float>{5, 6}));    // per row
  EXPECT_EQ(sum, (std::vector<float>{18, 24}));  // 2 x (9, 12)
}

TEST(TorchScript, TupleOutputsFollowTheIndexConvention) {
  auto m =
      load_torchscript(models() / "tuple.pt", config(R"(name: "pair" platform: "pytorch_libtorch"
input { name: "IN__0" data_type: TYPE_INT64 dims: [ 2 ] }
output { name: "OUT__1" data_type: TYPE_INT64 dims: [ 2 ] }
output { name: "OUT__0" data_type: TYPE_INT64 dims: [ 2 ] })"));
  tensor a(dtype::i64, {2});
  a.values<std::int64_t>()[0] = 3;
  a.values<std::int64_t>()[1] = -4;
  const std::vector<tensor> in = {a};
  const std::vector<tensor> out = m->run(in, 1);
  EXPECT_EQ(out[0].values<std::int64_t>()[0], 6);   // OUT__1 = a * 2
  EXPECT_EQ(out[1].values<std::int64_t>()[1], -3);  // OUT__0 = a + 1
}

TEST(TorchScript, MismatchesAreErrorsThatNameTheModel) {
  // A corrupt file fails its own load.
  EXPECT_THROW(load_torchscript(models() / "corrupt.pt", config(k_affine)), parse_error);
  EXPECT_THROW(load_torchscript(models() / "missing.pt", config(k_affine)), io_error);
  // Two inputs declared, forward takes one.
  EXPECT_THROW(
      load_torchscript(models() / "affine.pt", config(R"(name: "affine" platform: "pytorch_libtorch"
input { name: "a" data_type: TYPE_FP32 dims: 4 } input { name: "b" data_type: TYPE_FP32 dims: 4 }
output { name: "y" data_type: TYPE_FP32 dims: 3 })")),
      invalid_argument);
  // The output's declared type is not what the model returns.
  auto wrong =
      load_torchscript(models() / "affine.pt", config(R"(name: "affine" platform: "pytorch_libtorch"
input { name: "x" data_type: TYPE_FP32 dims: 4 } output { name: "y" data_type: TYPE_INT32 dims: 3 })"));
  const std::vector<tensor> in = {tensor(dtype::f32, {1, 4})};
  try {
    wrong->run(in, 1);
    FAIL();
  } catch (const invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "model 'affine' output 'y' is FP32, the configuration says INT32");
  }
  // An input of the wrong shape: the model's own error, one line.
  auto m = load_torchscript(models() / "affine.pt", config(k_affine));
  const std::vector<tensor> bad = {tensor(dtype::f32, {1, 5})};
  try {
    m->run(bad, 1);
    FAIL();
  } catch (const invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("model 'affine' failed: ", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace keel::serve
