#include "keel/serve/model_repository.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "keel/core/error.hpp"
#include "scaler_model.hpp"

namespace keel::serve {
namespace {

namespace fs = std::filesystem;

class Repository : public testing::repository_test {
 protected:
  static std::string config(const std::string& name, const std::string& extra = "") {
    return "name: \"" + name + "\" platform: \"pytorch_libtorch\"\n" +
           "input { name: \"x\" data_type: TYPE_FP32 dims: 4 }\n" +
           "output { name: \"y\" data_type: TYPE_FP32 dims: 4 }\n" + extra;
  }
};

TEST_F(Repository, ModelsVersionsAndPerModelErrors) {
  write("good/config.pbtxt", config("good"));
  write("good/1/model.pt", "x");
  write("good/3/model.pt", "x");
  write("good/2/other.pt", "x");    // not the model file: version 2 does not count
  write("good/007/model.pt", "x");  // not a version number
  write("all/config.pbtxt", config("all", "version_policy { all { } }"));
  write("all/1/model.pt", "x");
  write("all/2/model.pt", "x");
  write("misnamed/config.pbtxt", config("other"));
  write("broken/config.pbtxt", "name: \"broken\" platform: \"pytorch_libtorch\" bogus: 1\n");
  write("empty/config.pbtxt", config("empty"));
  write("missing/config.pbtxt",
        config("missing", "version_policy { specific { versions: [ 1, 2 ] } }"));
  write("missing/1/model.pt", "x");
  write("noconfig/1/model.pt", "x");
  write(".hidden/config.pbtxt", "junk");
  write("ensemble/config.pbtxt", R"(name: "ensemble" platform: "ensemble"
input { name: "x" data_type: TYPE_FP32 dims: 4 } output { name: "y" data_type: TYPE_FP32 dims: 4 }
ensemble_scheduling { step { model_name: "good" input_map { key: "x" value: "x" }
                             output_map { key: "y" value: "y" } } })");
  fs::create_directories(root_ / "ensemble/1");

  const std::vector<repository_model> models = scan_repository(root_);
  ASSERT_EQ(models.size(), 8u);
  auto get = [&](const std::string& n) -> const repository_model& {
    for (const auto& m : models)
      if (m.name == n) return m;
    throw std::runtime_error(n);
  };
  EXPECT_EQ(get("good").error, "");
  EXPECT_EQ(get("good").versions, (std::vector<std::int64_t>{3}));  // the latest one
  EXPECT_EQ(get("good").model_file(3), root_ / "good/3/model.pt");
  EXPECT_EQ(get("all").versions, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(get("ensemble").versions, (std::vector<std::int64_t>{1})) << get("ensemble").error;
  EXPECT_EQ(get("misnamed").error, (root_ / "misnamed/config.pbtxt").string() +
                                       ": name 'other' differs from its folder 'misnamed'");
  EXPECT_FALSE(get("misnamed").config);
  EXPECT_EQ(get("broken").error.rfind((root_ / "broken/config.pbtxt").string() + ":1:", 0), 0u)
      << get("broken").error;
  EXPECT_EQ(get("empty").error, (root_ / "empty").string() + ": no version folder holds model.pt");
  EXPECT_EQ(get("missing").error, (root_ / "missing").string() +
                                      ": version 2 named by version_policy is missing (no "
                                      "2/model.pt)");
  EXPECT_NE(get("noconfig").error.find("config.pbtxt"), std::string::npos);
}

TEST_F(Repository, ARootThatIsNotAFolderIsAnIoError) {
  EXPECT_THROW(scan_repository(root_ / "nope"), io_error);
  write("file", "x");
  EXPECT_THROW(scan_repository(root_ / "file"), io_error);
  EXPECT_TRUE(scan_repository(root_).size() == 0u);
}

}  // namespace
}  // namespace keel::serve
