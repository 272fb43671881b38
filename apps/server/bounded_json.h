// SPDX-License-Identifier: MIT
// Bounded JSON parsing for untrusted text (HTTP request bodies, backend replies, saved
// config): nlohmann's SAX interface drives a DOM builder that rejects the document WHILE it is
// parsed, as soon as it nests deeper than JsonLimits::max_depth or holds more values, object
// members or array elements than allowed. The parser and the builder are iterative (an explicit
// stack), so no input can deepen the C++ stack; and because the returned DOM is at most
// max_depth deep, the recursive code that later walks it (copies, dump(), validators, the chat
// template's from_json) recurses at most max_depth frames.
// An object that repeats a key is refused ("duplicate key"): RFC 8259 leaves its meaning open
// (parsers keep the first, the last, or both), and looking the key up in an ordered_json object
// is linear, so 250,000 repeats of 4,095 keys took 4.7 s. Each object's keys are kept in a hash
// set while it is open, so every member costs O(1) and counts against max_object_members.
// Invariants: on success *out is the document; on failure *out is untouched and the error names
// the limit that was hit (or the parse error with its byte offset). Header-only so that the
// server (ordered_json) and the agent (json) share one implementation. Thread-compatible.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

namespace sniper::server {

struct JsonLimits {
  size_t max_depth = 64;                 // nested objects/arrays; the document's root is depth 1
  size_t max_values = 1u << 18;          // every value counted once, containers included
  size_t max_object_members = 4096;      // per object; a repeated key is an error, not a member
  size_t max_array_elements = 1u << 17;  // per array
};

template <class J>
class BoundedJsonBuilder {
 public:
  using number_integer_t = typename J::number_integer_t;
  using number_unsigned_t = typename J::number_unsigned_t;
  using number_float_t = typename J::number_float_t;
  using string_t = typename J::string_t;
  using binary_t = typename J::binary_t;

  BoundedJsonBuilder(J* root, const JsonLimits& limits) : root_(root), limits_(limits) {}

  bool null() { return add(J(nullptr)) != nullptr; }
  bool boolean(bool v) { return add(J(v)) != nullptr; }
  bool number_integer(number_integer_t v) { return add(J(v)) != nullptr; }
  bool number_unsigned(number_unsigned_t v) { return add(J(v)) != nullptr; }
  bool number_float(number_float_t v, const string_t&) { return add(J(v)) != nullptr; }
  bool string(string_t& v) { return add(J(std::move(v))) != nullptr; }
  bool binary(binary_t&) { return fail("binary values are not JSON"); }

  bool start_object(size_t) { return open(J::value_t::object); }
  bool start_array(size_t) { return open(J::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t& k) {
    J& obj = *stack_.back();
    if (obj.size() >= limits_.max_object_members) {
      return fail("an object has more than " + std::to_string(limits_.max_object_members) +
                  " members (limit max_object_members)");
    }
    if (!keys_[stack_.size() - 1].insert(k).second) {
      std::string shown = k.size() > 40 ? k.substr(0, 40) + "..." : k;
      return fail("an object repeats the key \"" + shown + "\" (duplicate keys are refused)");
    }
    // The key is new, so this appends (no search through the members).
    slot_ = &obj[k];
    return true;
  }

  bool parse_error(size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    if (error_.empty()) error_ = std::string(ex.what()) + " (byte " + std::to_string(position) + ")";
    return false;
  }

  // Empty while nothing went wrong.
  const std::string& error() const { return error_; }

 private:
  bool fail(std::string why) {
    error_ = std::move(why);
    return false;
  }

  // Places v where the grammar says (root, next array element, or the member named by key()).
  J* add(J v) {
    if (++n_values_ > limits_.max_values) {
      fail("the document has more than " + std::to_string(limits_.max_values) + " values (limit max_values)");
      return nullptr;
    }
    if (stack_.empty()) {
      *root_ = std::move(v);
      return root_;
    }
    J& top = *stack_.back();
    if (top.is_array()) {
      if (top.size() >= limits_.max_array_elements) {
        fail("an array has more than " + std::to_string(limits_.max_array_elements) +
             " elements (limit max_array_elements)");
        return nullptr;
      }
      top.push_back(std::move(v));
      return &top.back();
    }
    *slot_ = std::move(v);
    return slot_;
  }

  bool open(typename J::value_t type) {
    if (stack_.size() >= limits_.max_depth) {
      return fail("the document nests deeper than " + std::to_string(limits_.max_depth) + " levels (limit max_depth)");
    }
    J* p = add(J(type));
    if (p == nullptr) return false;
    stack_.push_back(p);
    if (keys_.size() < stack_.size()) keys_.resize(stack_.size());
    keys_[stack_.size() - 1].clear();  // reused: keeps its buckets
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  J* root_;
  JsonLimits limits_;
  std::vector<J*> stack_;                           // open containers, innermost last; at most max_depth
  std::vector<std::unordered_set<string_t>> keys_;  // [depth] the keys of the open object at that depth
  J* slot_ = nullptr;                               // the member key() created, filled by the next value
  size_t n_values_ = 0;
  std::string error_;
};

// Parses text into *out within limits. Returns "" on success, else why not (a limit named by
// its JsonLimits field, or nlohmann's parse error). ignore_comments: accept // and /* */.
template <class J>
[[nodiscard]] std::string parse_json_bounded(std::string_view text, J* out, const JsonLimits& limits = {},
                                             bool ignore_comments = false) {
  J doc;
  BoundedJsonBuilder<J> builder(&doc, limits);
  bool ok = false;
  try {
    ok = J::sax_parse(text.begin(), text.end(), &builder, nlohmann::detail::input_format_t::json, /*strict=*/true,
                      ignore_comments);
  } catch (const std::exception& e) {  // nlohmann reports through the SAX; this is a backstop
    return std::string("malformed JSON: ") + e.what();
  }
  if (!ok) return builder.error().empty() ? std::string("malformed JSON") : builder.error();
  *out = std::move(doc);
  return {};
}

// J::parse(text, nullptr, /*allow_exceptions=*/false) within limits: the document, or a
// discarded value when text is malformed or past the limits (for callers that only need
// "valid or not", e.g. tool-call arguments).
template <class J>
[[nodiscard]] J parse_json_or_discarded(std::string_view text, const JsonLimits& limits = {}) {
  J j;
  if (!parse_json_bounded(text, &j, limits).empty()) return J(J::value_t::discarded);
  return j;
}

}  // namespace sniper::server
