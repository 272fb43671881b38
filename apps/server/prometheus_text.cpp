// SPDX-License-Identifier: MIT
// Prometheus text format 0.0.4 parser (see prometheus_text.h). A hand-written scanner over one
// line at a time; every index is checked against the line length before it is read.
#include "server/prometheus_text.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace sniper::server {
namespace {

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_space(char c) { return c == ' ' || c == '\t'; }

// Parses a sample value: a C float literal or NaN / +Inf / -Inf / Inf.
std::optional<double> parse_value(std::string_view s) {
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "+Inf" || s == "Inf") return std::numeric_limits<double>::infinity();
  if (s == "-Inf") return -std::numeric_limits<double>::infinity();
  if (s.empty() || s.size() > 64) return std::nullopt;
  std::string buf(s);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(buf.c_str(), &end);
  if (end != buf.c_str() + buf.size()) return std::nullopt;
  if (std::isnan(v) || std::isinf(v)) return std::nullopt;  // only the spellings above
  return v;
}

// Parses one sample line (not blank, not a comment) into `out`.
Status parse_sample(std::string_view line, size_t line_no, PromSample* out) {
  size_t i = 0;
  const size_t n = line.size();
  if (!is_name_start(line[0])) {
    return make_error("line %zu: metric name must start with [a-zA-Z_:] but starts with '%c'", line_no, line[0]);
  }
  while (i < n && is_name_char(line[i])) ++i;
  out->name = std::string(line.substr(0, i));
  if (i < n && line[i] == '{') {
    ++i;
    while (true) {
      while (i < n && is_space(line[i])) ++i;
      if (i < n && line[i] == '}') {
        ++i;
        break;
      }
      size_t name_start = i;
      if (i >= n || !is_name_start(line[i])) {
        return make_error("line %zu: expected a label name or '}' in the labels of '%s'", line_no, out->name.c_str());
      }
      while (i < n && is_name_char(line[i])) ++i;
      std::string label(line.substr(name_start, i - name_start));
      while (i < n && is_space(line[i])) ++i;
      if (i >= n || line[i] != '=') {
        return make_error("line %zu: expected '=' after label name '%s'", line_no, label.c_str());
      }
      ++i;
      while (i < n && is_space(line[i])) ++i;
      if (i >= n || line[i] != '"') {
        return make_error("line %zu: the value of label '%s' must be a quoted string", line_no, label.c_str());
      }
      ++i;
      std::string value;
      bool closed = false;
      while (i < n) {
        char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\') {
          if (i >= n) break;
          char e = line[i++];
          if (e == 'n') value += '\n';
          else if (e == '\\' || e == '"') value += e;
          else return make_error("line %zu: unknown escape '\\%c' in label '%s'", line_no, e, label.c_str());
        } else {
          value += c;
        }
      }
      if (!closed) return make_error("line %zu: unterminated value of label '%s'", line_no, label.c_str());
      out->labels.emplace_back(std::move(label), std::move(value));
      while (i < n && is_space(line[i])) ++i;
      if (i < n && line[i] == ',') {
        ++i;
        continue;
      }
      if (i < n && line[i] == '}') {
        ++i;
        break;
      }
      return make_error("line %zu: expected ',' or '}' after a label of '%s'", line_no, out->name.c_str());
    }
  }
  if (i >= n || !is_space(line[i])) {
    return make_error("line %zu: expected whitespace and a value after '%s'", line_no, out->name.c_str());
  }
  while (i < n && is_space(line[i])) ++i;
  size_t value_start = i;
  while (i < n && !is_space(line[i])) ++i;
  std::string_view value_text = line.substr(value_start, i - value_start);
  std::optional<double> value = parse_value(value_text);
  if (!value) {
    return make_error("line %zu: value '%.*s' of '%s' is not a number", line_no, static_cast<int>(value_text.size()),
                      value_text.data(), out->name.c_str());
  }
  out->value = *value;
  while (i < n && is_space(line[i])) ++i;
  if (i < n) {  // optional integer timestamp (milliseconds); ignored
    size_t ts_start = i;
    if (line[i] == '-') ++i;
    while (i < n && line[i] >= '0' && line[i] <= '9') ++i;
    while (i < n && is_space(line[i])) ++i;
    if (i < n || i == ts_start) {
      return make_error("line %zu: unexpected text after the value of '%s'", line_no, out->name.c_str());
    }
  }
  return ok_status();
}

bool labels_match(const PromSample& s, const PromLabels& match) {
  for (const auto& [key, want] : match) {
    bool found = false;
    for (const auto& [k, v] : s.labels) {
      if (k == key) {
        found = v == want;
        break;
      }
    }
    if (!found) return false;
  }
  return true;
}

}  // namespace

std::optional<double> PromMetrics::find(std::string_view name, const PromLabels& match) const {
  for (const PromSample& s : samples) {
    if (s.name == name && labels_match(s, match)) return s.value;
  }
  return std::nullopt;
}

double PromMetrics::get(std::string_view name, double fallback, const PromLabels& match) const {
  std::optional<double> v = find(name, match);
  return v ? *v : fallback;
}

double PromMetrics::sum(std::string_view name, const PromLabels& match) const {
  double total = 0.0;
  for (const PromSample& s : samples) {
    if (s.name == name && labels_match(s, match)) total += s.value;
  }
  return total;
}

Result<PromMetrics> parse_prometheus_text(std::string_view text) {
  PromMetrics metrics;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t start = 0;
    while (start < line.size() && is_space(line[start])) ++start;
    line.remove_prefix(start);
    if (line.empty() || line[0] == '#') continue;
    PromSample sample;
    SNIPER_TRY(parse_sample(line, line_no, &sample));
    metrics.samples.push_back(std::move(sample));
  }
  return metrics;
}

}  // namespace sniper::server
