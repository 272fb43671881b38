// SPDX-License-Identifier: MIT
// Python-compatible string helpers for the Jinja interpreter: UTF-8 code point iteration,
// str.isspace()/strip()/split()/splitlines(), case mapping, repr() quoting and JSON escaping.
// Invariants: strings are UTF-8 byte strings; a byte that does not start a valid UTF-8 sequence
// counts as one code point of its own and is copied through unchanged, so no helper loses bytes.
// Case mapping covers ASCII only (non-ASCII letters are left as they are).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sniper::jinja {

// Byte offsets of the start of every code point in `s`, followed by s.size().
[[nodiscard]] std::vector<size_t> utf8_offsets(std::string_view s);

// Number of code points in `s` (Python len()).
[[nodiscard]] size_t utf8_length(std::string_view s);

// Byte position and length of code point `index` of `s`; false (and *begin = s.size()) when
// `s` has no such code point. O(index).
[[nodiscard]] bool utf8_at(std::string_view s, uint64_t index, size_t* begin, size_t* len);

// Byte offset of the first occurrence of `needle` in `hay` at or after `from`, or npos. Linear
// time in the worst case: short needles (32 bytes or fewer) are matched at each occurrence of
// their first byte, longer ones with glibc's two-way memmem.
[[nodiscard]] size_t find_bytes(std::string_view hay, std::string_view needle, size_t from);

// Decodes the code point starting at byte `pos`; sets *n_bytes to its length (>= 1).
[[nodiscard]] uint32_t utf8_decode(std::string_view s, size_t pos, size_t* n_bytes);

// Appends the UTF-8 encoding of code point `cp` to `out`.
void utf8_append(std::string& out, uint32_t cp);

// Python str.isspace() for one code point (also what the regex \s matches).
[[nodiscard]] bool is_py_space(uint32_t cp);

// Python str.strip/lstrip/rstrip. With chars == nullptr whitespace is stripped, otherwise any
// code point contained in *chars. The view points into `s`.
[[nodiscard]] std::string_view py_strip_view(std::string_view s, const std::string* chars, bool left, bool right);
[[nodiscard]] std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right);

// Python str.split(sep, maxsplit) (sep == nullptr: split on whitespace runs, dropping empties)
// and str.rsplit, as views into `s` in *parts (null: only counted, in *n_parts when not null).
// maxsplit < 0 means no limit. Requires a non-empty *sep. Return false (parts incomplete) when
// there would be more than max_parts parts. Linear time; rsplit with max_parts < maxsplit + 1
// keeps at most max_parts word spans.
[[nodiscard]] bool py_split(std::string_view s, const std::string* sep, int64_t maxsplit, size_t max_parts,
                            std::vector<std::string_view>* parts, size_t* n_parts = nullptr);
[[nodiscard]] bool py_rsplit(std::string_view s, const std::string* sep, int64_t maxsplit, size_t max_parts,
                             std::vector<std::string_view>* parts, size_t* n_parts = nullptr);

// Python str.splitlines(keepends=False), as views (or counted, as py_split); false past
// max_parts lines.
[[nodiscard]] bool py_splitlines(std::string_view s, size_t max_parts, std::vector<std::string_view>* lines,
                                 size_t* n_lines = nullptr);

// How many replacements py_replace(s, old, _, count) makes (so its size can be checked first).
[[nodiscard]] uint64_t py_replace_count(std::string_view s, std::string_view old, int64_t count);

// Python str.replace(old, new, count); count < 0 replaces all.
[[nodiscard]] std::string py_replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count);

// Python str.count(sub) (non-overlapping; an empty sub counts len+1).
[[nodiscard]] int64_t py_count(std::string_view s, std::string_view sub);

// Code point index of the first (or last) occurrence of sub, or -1 (Python str.find / rfind).
[[nodiscard]] int64_t py_find(std::string_view s, std::string_view sub, bool reverse);

// ASCII case mapping in the manner of str.lower/upper/capitalize/title/swapcase.
[[nodiscard]] std::string ascii_lower(std::string_view s);
[[nodiscard]] std::string ascii_upper(std::string_view s);
[[nodiscard]] std::string py_capitalize(std::string_view s);
[[nodiscard]] std::string py_title(std::string_view s);

// Appends Python repr() of a str: quotes with ' unless the text holds ' and no ", escapes \\ \n
// \r \t, the quote and control characters. Returns false (with out cut short, at most a few
// bytes past max_size) when out would grow past max_size bytes.
[[nodiscard]] bool py_repr_string(std::string& out, std::string_view s, size_t max_size = SIZE_MAX);

// Appends json.dumps() of a str; ensure_ascii escapes every non-ASCII code point as \uXXXX.
// Returns false as py_repr_string does when out would grow past max_size bytes.
[[nodiscard]] bool json_escape_string(std::string& out, std::string_view s, bool ensure_ascii,
                                      size_t max_size = SIZE_MAX);

// Python repr()/str() of a float: shortest round-trip digits, "1.0", "1e+16", "1e-05", "inf", "nan".
[[nodiscard]] std::string py_float_repr(double x);

}  // namespace sniper::jinja
