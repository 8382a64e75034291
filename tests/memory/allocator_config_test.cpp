// allocator_config: PYTORCH_CUDA_ALLOC_CONF read with PyTorch's own rules and words, in both
// of PyTorch's grammars, keel's policy key, the environment, and the canonical string.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/memory/allocator_config.hpp"

namespace keel::memory {
namespace {

constexpr std::size_t k_mib = 1u << 20;
constexpr auto k_legacy = pytorch_grammar::cuda_allocator_config;
constexpr auto k_newer = pytorch_grammar::accelerator_allocator_config;

allocator_config torch(std::string_view text, pytorch_grammar grammar = k_newer) {
  return allocator_config::parse_pytorch(text, grammar).config;
}

std::string error_of(std::string_view text, pytorch_grammar grammar = k_newer) {
  try {
    allocator_config::parse_pytorch(text, grammar);
  } catch (const invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

std::string keel_error_of(std::string_view text) {
  try {
    allocator_config::parse(text, "KEEL_ALLOC_CONF");
  } catch (const invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

// Unsets the variables for the test and restores nothing: every test sets what it reads.
struct clean_environment : testing::Test {
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    unsetenv("KEEL_ALLOC_CONF");
    unsetenv("PYTORCH_CUDA_ALLOC_CONF");
    unsetenv("PYTORCH_ALLOC_CONF");
  }
};

TEST(AllocatorConfig, ParsesPyTorchSyntax) {
  const allocator_config c = allocator_config::parse(
      "max_split_size_mb:256,garbage_collection_threshold:0.8,expandable_segments:True,"
      "roundup_power2_divisions:[256:1,>:4],max_non_split_rounding_mb:64,policy:keel");
  EXPECT_EQ(c.max_split_size, 256u << 20);
  EXPECT_DOUBLE_EQ(c.garbage_collection_threshold, 0.8);
  EXPECT_TRUE(c.expandable_segments);
  EXPECT_EQ(c.max_non_split_rounding_size, 64u << 20);
  EXPECT_EQ(c.policy, policy_kind::keel);
  EXPECT_EQ(c.roundup_power2_divisions[0], 1u);  // the first entry fills below it
  EXPECT_EQ(c.roundup_power2_divisions[8], 1u);  // newest grammar: '>' starts after 256 MiB
  EXPECT_EQ(c.roundup_power2_divisions[9], 4u);
  EXPECT_EQ(c.roundup_power2_divisions[15], 4u);
  EXPECT_EQ(allocator_config::parse(c.to_string()), c);
  EXPECT_EQ(allocator_config::parse("").to_string(), "");
  EXPECT_EQ(allocator_config::parse("roundup_power2_divisions:8").roundup_power2_divisions[3], 8u);
  // Spaces between tokens and a trailing comma, as PyTorch's tokenizer allows.
  EXPECT_EQ(torch(" max_split_size_mb : 256 , expandable_segments:True,"),
            torch("max_split_size_mb:256,expandable_segments:True"));
  // A repeated key overrides the earlier one.
  EXPECT_FALSE(torch("expandable_segments:True,expandable_segments:False").expandable_segments);
}

TEST(AllocatorConfig, AcceptsEveryKeyPyTorchAccepts) {
  const std::vector<std::string> common = {
      "max_split_size_mb:64",
      "max_non_split_rounding_mb:64",
      "garbage_collection_threshold:0.6",
      "roundup_power2_divisions:4",
      "roundup_power2_divisions:[64:8,256:4,1024:4,>:1]",
      "roundup_power2_divisions:[256:0,>:2]",
      "expandable_segments:True",
      "expandable_segments:False",
      "release_lock_on_cudamalloc:True",
      "release_lock_on_hipmalloc:False",
      "backend:native",
      "backend:cudaMallocAsync",
      "pinned_use_cuda_host_register:True",
      "pinned_use_hip_host_register:True",
      "pinned_num_register_threads:8",
      "pinned_reserve_segment_size_mb:1024",
      "pinned_use_background_threads:True",
      "graph_capture_record_stream_reuse:True",
  };
  for (const std::string& text : common) {
    for (const pytorch_grammar g : {k_legacy, k_newer}) {
      EXPECT_EQ(error_of(text, g), "no error") << text << " " << to_string(g);
    }
  }
  const std::vector<std::string> newer = {
      "max_split_size_mb:20",  // >= 20 since the accelerator parser; 2.0-2.9 wanted > 20
      "per_process_memory_fraction:0.5",
      "large_segment_size_mb:40",
      "pinned_free_catch_all:True",
      "throw_on_cudamalloc_oom:True",
  };
  for (const std::string& text : newer) {
    EXPECT_EQ(error_of(text, k_newer), "no error") << text;
    EXPECT_NE(error_of(text, k_legacy), "no error") << text;
  }
}

TEST(AllocatorConfig, IgnoredKeysAreListedOnce) {
  const parsed_allocator_config p = allocator_config::parse_pytorch(
      "pinned_use_cuda_host_register:True,max_split_size_mb:128,pinned_num_register_threads:4,"
      "pinned_use_cuda_host_register:False,graph_capture_record_stream_reuse:True");
  EXPECT_EQ(p.config, torch("max_split_size_mb:128"));
  EXPECT_EQ(p.ignored_keys, (std::vector<std::string>{"pinned_use_cuda_host_register",
                                                      "pinned_num_register_threads",
                                                      "graph_capture_record_stream_reuse"}));
  EXPECT_EQ(ignored_keys_line(p.ignored_keys),
            "ignored (does not affect replay): pinned_use_cuda_host_register, "
            "pinned_num_register_threads, graph_capture_record_stream_reuse");
  EXPECT_EQ(ignored_keys_line({}), "");
  EXPECT_TRUE(allocator_config::parse_pytorch("expandable_segments:True").ignored_keys.empty());
}

TEST(AllocatorConfig, BooleansAreTrueOrFalseExactly) {
  for (const char* word : {"true", "yes", "1", "on", "TRUE"}) {
    const std::string text = std::string("expandable_segments:") + word;
    EXPECT_EQ(error_of(text, k_legacy),
              "PYTORCH_CUDA_ALLOC_CONF: invalid value '" + std::string(word) +
                  "' for expandable_segments: Expected a single True/False argument for "
                  "expandable_segments");
    // The newer tokenizer's message quotes the token index: key 0, ':' 1, value 2.
    EXPECT_EQ(error_of(text, k_newer),
              "PYTORCH_CUDA_ALLOC_CONF: invalid value '" + std::string(word) +
                  "' for expandable_segments: Expected 'True' or 'False' at index 2 in "
                  "ConfigTokenizer but got '" +
                  word + "'");
  }
  EXPECT_TRUE(contains(error_of("max_split_size_mb:64,pinned_use_cuda_host_register:yes"),
                       "at index 6 in ConfigTokenizer but got 'yes'"));
  // keel's own strings are as strict.
  EXPECT_TRUE(contains(keel_error_of("expandable_segments:yes"), "Expected 'True' or 'False'"));
}

TEST(AllocatorConfig, SplitSizeLimitsDifferBetweenGrammars) {
  EXPECT_EQ(error_of("max_split_size_mb:20", k_legacy),
            "PYTORCH_CUDA_ALLOC_CONF: invalid value '20' for max_split_size_mb: CachingAllocator "
            "option max_split_size_mb too small, must be > 20");
  EXPECT_EQ(torch("max_split_size_mb:21", k_legacy).max_split_size, 21 * k_mib);
  EXPECT_EQ(torch("max_split_size_mb:20", k_newer).max_split_size, 20 * k_mib);
  EXPECT_EQ(error_of("max_split_size_mb:19", k_newer),
            "PYTORCH_CUDA_ALLOC_CONF: invalid value '19' for max_split_size_mb: CachingAllocator "
            "option max_split_size_mb too small, must be >= 20");
  EXPECT_EQ(error_of("max_non_split_rounding_mb:20", k_legacy),
            "PYTORCH_CUDA_ALLOC_CONF: invalid value '20' for max_non_split_rounding_mb: "
            "CachingAllocator option max_non_split_rounding_mb too small, must be > 20");
  EXPECT_TRUE(contains(error_of("max_non_split_rounding_mb:10", k_newer), "must be >= 20"));
  // The newest parser's floor is the large segment size, whatever the order of the keys.
  EXPECT_TRUE(contains(error_of("max_split_size_mb:30,large_segment_size_mb:40"), "must be >= 40"));
  const allocator_config big = torch("large_segment_size_mb:40");
  EXPECT_EQ(big.large_segment_size, 40 * k_mib);
  EXPECT_EQ(big.max_non_split_rounding_size, 40 * k_mib);  // its default follows
  EXPECT_EQ(error_of("large_segment_size_mb:10"),
            "PYTORCH_CUDA_ALLOC_CONF: invalid value '10' for large_segment_size_mb: "
            "CachingAllocator option large_segment_size_mb must be > 10 MB");
  // A value that does not fit in bytes is capped, as PyTorch does.
  EXPECT_NE(torch("max_split_size_mb:99999999999999999").max_split_size,
            allocator_config::k_unlimited);
  EXPECT_TRUE(contains(error_of("max_split_size_mb:256MB"), "expected a whole number"));
  EXPECT_TRUE(contains(error_of("max_split_size_mb:-5"), "expected a whole number"));
}

TEST(AllocatorConfig, GarbageCollectionThresholdIsStrictlyInsideZeroOne) {
  EXPECT_DOUBLE_EQ(torch("garbage_collection_threshold:0.999").garbage_collection_threshold, 0.999);
  for (const char* v : {"0", "1", "1.5", "-0.1"}) {
    const std::string text = std::string("garbage_collection_threshold:") + v;
    EXPECT_TRUE(
        contains(error_of(text), "garbage_collect_threshold is invalid, set it in (0.0, 1.0)"))
        << v;
  }
  EXPECT_TRUE(contains(error_of("garbage_collection_threshold:0", k_legacy),
                       "garbage_collect_threshold too small, set it 0.0~1.0"));
  EXPECT_TRUE(contains(error_of("garbage_collection_threshold:1", k_legacy),
                       "garbage_collect_threshold too big, set it 0.0~1.0"));
  EXPECT_TRUE(contains(error_of("garbage_collection_threshold:nan"), "expected a number"));
}

TEST(AllocatorConfig, RoundupDivisionsAndTheGreaterThanRule) {
  EXPECT_TRUE(contains(error_of("roundup_power2_divisions:3"),
                       "For roundups, the divisions has to be power of 2"));
  EXPECT_TRUE(contains(error_of("roundup_power2_divisions:0"), "has to be power of 2"));
  EXPECT_TRUE(contains(error_of("roundup_power2_divisions:[256:3]"),
                       "has to be power of 2 or 0 to disable roundup"));
  const std::string interval = error_of("roundup_power2_divisions:[300:2]");
  EXPECT_TRUE(contains(interval, "'300'")) << interval;
  EXPECT_TRUE(contains(interval, "For roundups, the intervals have to be power of 2")) << interval;
  EXPECT_TRUE(contains(error_of("roundup_power2_divisions:[256]"), "expected SIZE_MB:DIVISIONS"));
  // '>' after the last named interval: 2.0-2.9 fill from that interval on (overwriting it),
  // the newer parser fills the ones after it.
  const allocator_config legacy = torch("roundup_power2_divisions:[256:1,512:2,>:8]", k_legacy);
  const allocator_config newer = torch("roundup_power2_divisions:[256:1,512:2,>:8]", k_newer);
  EXPECT_EQ(legacy.roundup_power2_divisions[9], 8u);
  EXPECT_EQ(newer.roundup_power2_divisions[9], 2u);
  for (const allocator_config& c : {legacy, newer}) {
    EXPECT_EQ(c.roundup_power2_divisions[0], 1u);
    EXPECT_EQ(c.roundup_power2_divisions[8], 1u);
    EXPECT_EQ(c.roundup_power2_divisions[10], 8u);
    EXPECT_EQ(c.roundup_power2_divisions[15], 8u);
  }
  // Intervals past 32 GiB clamp to the last one; an empty list leaves no rounding.
  EXPECT_EQ(torch("roundup_power2_divisions:[65536:4]").roundup_power2_divisions[15], 4u);
  EXPECT_EQ(torch("roundup_power2_divisions:[]"), allocator_config{});
  // A roundup setting replaces a base's, it is not merged into it.
  const allocator_config base = torch("roundup_power2_divisions:8");
  const allocator_config listed =
      allocator_config::parse("roundup_power2_divisions:[1024:2]", "test", base);
  EXPECT_EQ(listed.roundup_power2_divisions[11], 0u);
  EXPECT_EQ(listed.roundup_power2_divisions[10], 2u);
}

TEST(AllocatorConfig, BackendAndTheKeysThatAreNotModelled) {
  const allocator_config async = torch("backend:cudaMallocAsync");
  EXPECT_TRUE(async.cuda_malloc_async);
  ASSERT_TRUE(async.replay_limitation());
  EXPECT_TRUE(contains(*async.replay_limitation(), "cudaMallocAsync"));
  EXPECT_EQ(async.to_string(), "backend:cudaMallocAsync");
  EXPECT_FALSE(torch("backend:native").cuda_malloc_async);
  EXPECT_FALSE(torch("backend:native").replay_limitation());
  EXPECT_EQ(error_of("backend:hipMallocAsync"),
            "PYTORCH_CUDA_ALLOC_CONF: invalid value 'hipMallocAsync' for backend: Unknown "
            "allocator backend, options are native and cudaMallocAsync");
  EXPECT_TRUE(torch("large_segment_size_mb:40").replay_limitation());
  const allocator_config fraction = torch("per_process_memory_fraction:0.5");
  EXPECT_EQ(fraction.per_process_memory_fraction, 0.5);
  EXPECT_TRUE(contains(error_of("per_process_memory_fraction:1.5"),
                       "per_process_memory_fraction is invalid, set it in [0.0, 1.0]"));
  EXPECT_TRUE(contains(error_of("pinned_num_register_threads:3"),
                       "Number of register threads has to be power of 2, got 3"));
  EXPECT_TRUE(contains(error_of("pinned_num_register_threads:256"),
                       "Number of register threads should be less than or equal to 128, got 256"));
  EXPECT_TRUE(
      contains(error_of("pinned_num_register_threads:256", k_legacy), "less than or equal to 128"));
  EXPECT_TRUE(contains(error_of("pinned_reserve_segment_size_mb:0"),
                       "Pinned reserve segment size has to be greater than 0"));
}

TEST(AllocatorConfig, UnknownKeysInPyTorchsWords) {
  EXPECT_TRUE(contains(error_of("max_split_size:256", k_newer),
                       "Unrecognized key 'max_split_size' in CUDA allocator config."));
  EXPECT_TRUE(contains(error_of("max_split_size:256", k_legacy),
                       "Unrecognized CachingAllocator option: max_split_size"));
  EXPECT_TRUE(contains(error_of("max_split_size:256"), "valid keys: max_split_size_mb"));
  EXPECT_TRUE(contains(error_of("per_process_memory_fraction:0.5", k_legacy),
                       "PyTorch 2.10 and later accept it"));
  // Syntax errors name the column.
  EXPECT_TRUE(
      contains(error_of("expandable_segments"), "expected ':' after key 'expandable_segments'"));
  EXPECT_TRUE(contains(error_of("roundup_power2_divisions:[256:1"), "expected ']'"));
  // ';' is part of a word: the value is "64;expandable_segments" and a ':' follows it.
  EXPECT_TRUE(contains(error_of("max_split_size_mb:64;expandable_segments:True"),
                       "expected ',' between items, found ':'"));
  EXPECT_TRUE(contains(error_of("max_split_size_mb:[64]"), "expected a single value, not a list"));
}

TEST(AllocatorConfig, PolicyIsKeelsKeyOnly) {
  EXPECT_EQ(allocator_config::parse("policy:keel").policy, policy_kind::keel);
  EXPECT_EQ(allocator_config::parse("policy:pytorch").policy, policy_kind::pytorch);
  EXPECT_TRUE(contains(keel_error_of("policy:fast"), "expected pytorch or keel"));
  const std::string e = error_of("policy:keel,expandable_segments:True");
  EXPECT_TRUE(contains(e, "'policy' is keel's key")) << e;
  EXPECT_TRUE(contains(e, "KEEL_ALLOC_CONF=policy:keel")) << e;
  EXPECT_TRUE(contains(e, "Unrecognized key 'policy' in CUDA allocator config.")) << e;
  EXPECT_FALSE(contains(error_of("bogus:1"), "policy")) << "policy is not a PyTorch key";
  EXPECT_TRUE(contains(keel_error_of("bogus:1"), "policy"));
}

TEST(AllocatorConfig, ToStringIsCanonicalInBothGrammars) {
  std::vector<allocator_config> configs;
  for (const char* text :
       {"", "max_split_size_mb:64", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
        "roundup_power2_divisions:[1:4,2:0,>:8]", "roundup_power2_divisions:[32768:2]",
        "expandable_segments:True,roundup_power2_divisions:4,release_lock_on_cudamalloc:True",
        "garbage_collection_threshold:0.8,max_split_size_mb:256,max_non_split_rounding_mb:64",
        "backend:cudaMallocAsync"}) {
    configs.push_back(torch(text));
  }
  configs.push_back(torch("large_segment_size_mb:40,per_process_memory_fraction:0.25"));
  configs.push_back(allocator_config::parse("policy:keel,expandable_segments:True"));
  for (const allocator_config& c : configs) {
    EXPECT_EQ(allocator_config::parse(c.to_string()), c) << c.to_string();
    allocator_config pytorch_only = c;
    pytorch_only.policy = policy_kind::pytorch;
    EXPECT_EQ(torch(c.pytorch_string()), pytorch_only) << c.pytorch_string();
    if (c.large_segment_size == allocator_config::k_large_segment &&
        !c.per_process_memory_fraction) {
      EXPECT_EQ(torch(c.pytorch_string(), k_legacy), pytorch_only) << c.pytorch_string();
    }
  }
  EXPECT_EQ(allocator_config::parse("policy:keel,max_split_size_mb:64").pytorch_string(),
            "max_split_size_mb:64");
}

TEST(AllocatorConfig, GrammarFromVersionAndRecordedSettings) {
  EXPECT_EQ(grammar_for_torch_version("2.9.1+cu128"), k_legacy);
  EXPECT_EQ(grammar_for_torch_version("2.1.0"), k_legacy);
  EXPECT_EQ(grammar_for_torch_version("1.13.1"), k_legacy);
  EXPECT_EQ(grammar_for_torch_version("2.10.0"), k_newer);
  EXPECT_EQ(grammar_for_torch_version("2.11.0.dev20260101+cu130"), k_newer);
  EXPECT_EQ(grammar_for_torch_version("nightly"), k_newest_pytorch_grammar);

  const std::vector<std::string> v22 = {"PYTORCH_CUDA_ALLOC_CONF", "max_split_size",
                                        "garbage_collection_threshold", "expandable_segments",
                                        "roundup_power2_divisions"};
  EXPECT_EQ(grammar_for_settings(v22), k_legacy);
  std::vector<std::string> v29 = v22;
  v29.emplace_back("graph_capture_record_stream_reuse");
  EXPECT_EQ(grammar_for_settings(v29), k_newest_pytorch_grammar);
  EXPECT_EQ(grammar_for_settings(v29, "max_split_size_mb:20"), k_newer);
  EXPECT_EQ(grammar_for_settings(v29, "expandable_segments:True"), k_newest_pytorch_grammar);
  std::vector<std::string> generic = v29;
  generic.emplace_back("PYTORCH_ALLOC_CONF");
  EXPECT_EQ(grammar_for_settings(generic), k_newer);
}

TEST_F(clean_environment, PyTorchVariableIsStrictAndKeelsIsLayeredOnTop) {
  setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", 1);
  EXPECT_TRUE(allocator_config::from_environment().expandable_segments);
  setenv("KEEL_ALLOC_CONF", "policy:keel", 1);
  allocator_config c = allocator_config::from_environment();
  EXPECT_EQ(c.policy, policy_kind::keel);
  EXPECT_TRUE(c.expandable_segments);  // PyTorch's settings stay; keel's are added
  setenv("KEEL_ALLOC_CONF", "policy:keel,expandable_segments:False", 1);
  EXPECT_FALSE(allocator_config::from_environment().expandable_segments);
  setenv("KEEL_ALLOC_CONF", "bogus:1", 1);
  EXPECT_THROW(allocator_config::from_environment(), invalid_argument);
  unsetenv("KEEL_ALLOC_CONF");

  setenv("PYTORCH_CUDA_ALLOC_CONF", "policy:keel", 1);
  try {
    allocator_config::from_environment();
    ADD_FAILURE() << "policy in PYTORCH_CUDA_ALLOC_CONF was accepted";
  } catch (const invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "PYTORCH_CUDA_ALLOC_CONF: 'policy' is keel's key")) << e.what();
    EXPECT_TRUE(contains(e.what(), "KEEL_ALLOC_CONF")) << e.what();
  }
  setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:yes", 1);
  EXPECT_THROW(allocator_config::from_environment(), invalid_argument);

  setenv("PYTORCH_CUDA_ALLOC_CONF", "pinned_use_cuda_host_register:True", 1);
  const parsed_allocator_config p = allocator_config::parse_environment();
  EXPECT_EQ(p.config, allocator_config{});
  EXPECT_EQ(p.ignored_keys, std::vector<std::string>{"pinned_use_cuda_host_register"});
}

TEST_F(clean_environment, PyTorchAllocConfIsReadByTheNewerGrammarOnly) {
  setenv("PYTORCH_ALLOC_CONF", "max_split_size_mb:64", 1);
  EXPECT_EQ(allocator_config::from_environment().max_split_size, 64 * k_mib);
  EXPECT_EQ(allocator_config::from_environment(k_legacy), allocator_config{});
  setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128", 1);  // the CUDA name comes first
  EXPECT_EQ(allocator_config::from_environment().max_split_size, 128 * k_mib);
}

}  // namespace
}  // namespace keel::memory
