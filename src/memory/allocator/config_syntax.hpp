// The syntax of PYTORCH_CUDA_ALLOC_CONF strings, as PyTorch's parsers read it
// (allocator_config.cpp gives the items their meaning): tokens, then items `key:value` or
// `key:[element,element:value]` separated by commas. Errors are keel::invalid_argument with
// the origin, the column and the text. An item points into the parser's tokens: it lives as
// long as its parser. Not thread-safe per parser; the functions are pure.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/memory/allocator_config.hpp"

namespace keel::memory::config_detail {

inline bool is_legacy(pytorch_grammar g) { return g == pytorch_grammar::cuda_allocator_config; }

// ---- tokens, as PyTorch's tokenizers cut them ------------------------------------------------
// A token is one of , : [ ] or a run of other characters; whitespace between is dropped (the
// 2.0-2.9 lexer drops only spaces). `index` is the token's position, which PyTorch's newer
// messages quote.

struct token {
  std::string text;
  std::size_t column = 0;  // 1-based
  std::size_t index = 0;
};

inline bool is_punct(char c) { return c == ',' || c == ':' || c == '[' || c == ']'; }

std::vector<token> tokenize(std::string_view text, pytorch_grammar grammar);

struct element {
  const token* key = nullptr;
  const token* value = nullptr;  // null for a bare element
};

struct item {
  const token* key = nullptr;
  const token* value = nullptr;  // the word, when !is_list
  bool is_list = false;
  std::vector<element> list;
};

// The value as written: "word" or "[a:b,c]".
std::string value_text(const item& it);

class parser {
 public:
  parser(std::string_view text, std::string_view origin, const config_parse_options& options)
      : text_(text), origin_(origin), tokens_(tokenize(text, options.grammar)) {}

  std::vector<item> items() {
    std::vector<item> out;
    std::size_t i = 0;
    while (i < tokens_.size()) {
      item it;
      it.key = &tokens_[i];
      if (is_punct(it.key->text[0])) fail(*it.key, "expected a key");
      expect(++i, ":", fmt::format("after key '{}'", it.key->text));
      if (++i >= tokens_.size()) fail_end(fmt::format("expected a value for '{}'", it.key->text));
      if (tokens_[i].text == "[") {
        it.is_list = true;
        parse_list(it, i);
      } else if (is_punct(tokens_[i].text[0])) {
        fail(tokens_[i], fmt::format("expected a value for '{}'", it.key->text));
      } else {
        it.value = &tokens_[i];
      }
      out.push_back(std::move(it));
      if (++i >= tokens_.size()) break;
      expect(i, ",", "between items");
      ++i;  // a trailing comma ends the text, as in PyTorch
    }
    return out;
  }

  [[noreturn]] void fail(const token& t, const std::string& what) const {
    throw invalid_argument(
        fmt::format("{}: {} at column {} of '{}'", origin_, what, t.column, text_));
  }

 private:
  [[noreturn]] void fail_end(const std::string& what) const {
    throw invalid_argument(fmt::format("{}: {} at the end of '{}'", origin_, what, text_));
  }

  void expect(std::size_t i, std::string_view punct, const std::string& context) const {
    if (i >= tokens_.size()) fail_end(fmt::format("expected '{}' {}", punct, context));
    if (tokens_[i].text != punct) {
      fail(tokens_[i],
           fmt::format("expected '{}' {}, found '{}'", punct, context, tokens_[i].text));
    }
  }

  // tokens_[i] is "["; leaves i at the closing "]".
  void parse_list(item& it, std::size_t& i) const {
    const std::string close = fmt::format("to close the list of '{}'", it.key->text);
    if (++i >= tokens_.size()) fail_end(fmt::format("expected ']' {}", close));
    if (tokens_[i].text == "]") return;
    while (true) {
      if (is_punct(tokens_[i].text[0])) {
        fail(tokens_[i], fmt::format("expected a list element for '{}'", it.key->text));
      }
      element e{&tokens_[i], nullptr};
      if (i + 1 < tokens_.size() && tokens_[i + 1].text == ":") {
        i += 2;
        if (i >= tokens_.size() || is_punct(tokens_[i].text[0])) {
          const std::string what =
              fmt::format("expected a value after '{}:' in '{}'", e.key->text, it.key->text);
          if (i >= tokens_.size()) fail_end(what);
          fail(tokens_[i], what);
        }
        e.value = &tokens_[i];
      }
      it.list.push_back(e);
      if (++i >= tokens_.size()) fail_end(fmt::format("expected ']' {}", close));
      if (tokens_[i].text == "]") return;
      expect(i, ",", fmt::format("between the elements of '{}'", it.key->text));
      if (++i >= tokens_.size()) fail_end(fmt::format("expected ']' {}", close));
    }
  }

  std::string_view text_;
  std::string_view origin_;
  std::vector<token> tokens_;
};

}  // namespace keel::memory::config_detail
