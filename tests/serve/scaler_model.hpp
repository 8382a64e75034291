// The serve tests' backend and repository fixture. A model file is text "scale S [bytes B]
// [delay_ms D] [corrupt]": the model multiplies its one FP32 input by S, claims B resident
// bytes and sleeps D ms per run; "corrupt" fails its load. Runs and loads are counted.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "keel/core/error.hpp"
#include "keel/serve/server.hpp"

namespace keel::serve::testing {

namespace fs = std::filesystem;

inline std::atomic<int> g_runs{0};
inline std::atomic<int> g_loads{0};

class scaler final : public model_instance {
 public:
  scaler(float scale, std::uint64_t bytes, int delay_ms)
      : scale_(scale), bytes_(bytes), delay_ms_(delay_ms) {}
  std::vector<tensor> run(std::span<const tensor> in, int) override {
    ++g_runs;
    if (delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    tensor out = in[0];
    for (float& v : out.values<float>()) v *= scale_;
    return {out};
  }
  std::uint64_t resident_bytes() const override { return bytes_; }

 private:
  float scale_;
  std::uint64_t bytes_;
  int delay_ms_;
};

inline std::unique_ptr<model_instance> load_scaler(const fs::path& file, const model_config&) {
  std::ifstream f(file);
  std::string word;
  float scale = 1;
  std::uint64_t bytes = 0;
  int delay = 0;
  while (f >> word) {
    if (word == "scale") f >> scale;
    if (word == "bytes") f >> bytes;
    if (word == "delay_ms") f >> delay;
    if (word == "corrupt") throw parse_error::in_object(file.string(), "not a model");
  }
  ++g_loads;
  return std::make_unique<scaler>(scale, bytes, delay);
}

// A fresh repository folder per test.
class repository_test : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("keel-serve-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    g_runs = 0;
    g_loads = 0;
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const fs::path& rel, const std::string& text) const {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  // A model taking x: FP32 [2] (batched up to 4) to y.
  void model(const std::string& name, const std::string& file,
             const std::string& extra = "") const {
    write(name + "/config.pbtxt",
          "name: \"" + name + "\" platform: \"pytorch_libtorch\" max_batch_size: 4\n" +
              "input { name: \"x\" data_type: TYPE_FP32 dims: 2 }\n" +
              "output { name: \"y\" data_type: TYPE_FP32 dims: 2 }\n" + extra);
    write(name + "/1/model.pt", file);
  }
  std::unique_ptr<server> start(std::uint64_t memory = 0) const {
    return std::make_unique<server>(server_options{root_, load_scaler, 2, memory});
  }
  fs::path root_;
};

}  // namespace keel::serve::testing
