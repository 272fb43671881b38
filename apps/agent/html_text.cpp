// SPDX-License-Identifier: MIT
// Search-result parsing and page-to-text reduction (see html_text.h). A small forgiving tag
// scanner, not an HTML parser: good enough for result pages and article text.
#include "agent/html_text.h"
#include "agent/text_util.h"

#include <cctype>
#include <cstdint>
#include <set>

namespace sniper::agent {

namespace {

void append_utf8(std::string* out, uint32_t cp) {
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

struct Tag {
  std::string name;  // lower case, without '/'
  bool closing = false;
  std::string attrs;  // raw attribute text
  size_t end = 0;     // index just past '>'
};

// Parses the tag starting at html[pos] == '<'. Returns false if it is not a tag.
bool parse_tag(std::string_view html, size_t pos, Tag* tag) {
  size_t i = pos + 1;
  if (i >= html.size()) return false;
  tag->closing = html[i] == '/';
  if (tag->closing) ++i;
  size_t name_start = i;
  while (i < html.size() && (std::isalnum(static_cast<unsigned char>(html[i])) || html[i] == '-' || html[i] == '!'))
    ++i;
  if (i == name_start) return false;
  tag->name = lower(html.substr(name_start, i - name_start));
  // Find the closing '>' outside quotes.
  char quote = 0;
  size_t attrs_start = i;
  for (; i < html.size(); ++i) {
    char c = html[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '>') {
      break;
    }
  }
  if (i >= html.size()) return false;
  tag->attrs = std::string(html.substr(attrs_start, i - attrs_start));
  tag->end = i + 1;
  return true;
}

// Value of attribute `name` in a raw attribute string ("" if absent), entities decoded.
std::string attribute(const std::string& attrs, const std::string& name) {
  std::string l = lower(attrs);
  size_t pos = 0;
  while ((pos = l.find(name, pos)) != std::string::npos) {
    bool word_start = pos == 0 || std::isspace(static_cast<unsigned char>(l[pos - 1]));
    size_t i = pos + name.size();
    while (i < l.size() && std::isspace(static_cast<unsigned char>(l[i]))) ++i;
    if (!word_start || i >= l.size() || l[i] != '=') {
      pos += name.size();
      continue;
    }
    ++i;
    while (i < l.size() && std::isspace(static_cast<unsigned char>(l[i]))) ++i;
    if (i >= l.size()) return "";
    if (attrs[i] == '"' || attrs[i] == '\'') {
      size_t close = attrs.find(attrs[i], i + 1);
      if (close == std::string::npos) close = attrs.size();
      return decode_entities(std::string_view(attrs).substr(i + 1, close - i - 1));
    }
    size_t e = i;
    while (e < attrs.size() && !std::isspace(static_cast<unsigned char>(attrs[e])) && attrs[e] != '/') ++e;
    return decode_entities(std::string_view(attrs).substr(i, e - i));
  }
  return "";
}

// Scheme+host ("https://host:port") of a URL, or "".
std::string origin_of(const std::string& url) {
  size_t s = url.find("://");
  if (s == std::string::npos) return "";
  size_t e = url.find('/', s + 3);
  return url.substr(0, e);
}

std::string resolve(const std::string& href, const std::string& base_url) {
  if (href.rfind("http://", 0) == 0 || href.rfind("https://", 0) == 0) return href;
  std::string origin = origin_of(base_url);
  if (href.rfind("//", 0) == 0) {
    size_t s = origin.find("://");
    return (s == std::string::npos ? "https" : origin.substr(0, s)) + ":" + href;
  }
  if (!href.empty() && href[0] == '/' && !origin.empty()) return origin + href;
  return "";
}

// The target of a DuckDuckGo redirect link (".../l/?uddg=<encoded>&rut=..."), else the link.
std::string unwrap_redirect(const std::string& url) {
  size_t p = url.find("uddg=");
  if (p == std::string::npos) return url;
  size_t e = url.find('&', p);
  return url_decode(std::string_view(url).substr(p + 5, e == std::string::npos ? std::string::npos : e - p - 5));
}

bool has_class(const std::string& attrs, const std::string& cls) {
  std::string c = " " + attribute(attrs, "class") + " ";
  return c.find(" " + cls + " ") != std::string::npos;
}

// Case-insensitive find of an ASCII needle (lower case) in html from `from`.
size_t find_ci(std::string_view html, const std::string& needle, size_t from) {
  if (needle.empty() || html.size() < needle.size()) return std::string_view::npos;
  for (size_t i = from; i + needle.size() <= html.size(); ++i) {
    size_t k = 0;
    while (k < needle.size() && std::tolower(static_cast<unsigned char>(html[i + k])) == needle[k]) ++k;
    if (k == needle.size()) return i;
  }
  return std::string_view::npos;
}

// Inner HTML of the element whose open tag ends at `from`, up to its closing `</name>`.
std::string_view inner_html(std::string_view html, size_t from, const std::string& name, size_t* end) {
  size_t close = find_ci(html, "</" + name, from);
  if (close == std::string_view::npos) close = html.size();
  *end = close;
  return html.substr(from, close - from);
}

}  // namespace

std::string decode_entities(std::string_view text) {
  static const struct {
    const char* name;
    uint32_t cp;
  } kNamed[] = {{"amp", '&'},      {"lt", '<'},       {"gt", '>'},       {"quot", '"'},      {"apos", '\''},
                {"nbsp", 0xA0},    {"ndash", 0x2013}, {"mdash", 0x2014}, {"hellip", 0x2026}, {"lsquo", 0x2018},
                {"rsquo", 0x2019}, {"ldquo", 0x201C}, {"rdquo", 0x201D}, {"copy", 0xA9},     {"reg", 0xAE},
                {"trade", 0x2122}, {"middot", 0xB7},  {"bull", 0x2022},  {"eacute", 0xE9},   {"euro", 0x20AC},
                {"laquo", 0xAB},   {"raquo", 0xBB},   {"times", 0xD7},   {"deg", 0xB0}};
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out += text[i];
      continue;
    }
    size_t semi = text.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) {
      out += '&';
      continue;
    }
    std::string_view ref = text.substr(i + 1, semi - i - 1);
    bool done = false;
    if (!ref.empty() && ref[0] == '#') {
      uint32_t cp = 0;
      bool hex = ref.size() > 1 && (ref[1] == 'x' || ref[1] == 'X');
      std::string_view digits = ref.substr(hex ? 2 : 1);
      bool valid = !digits.empty();
      for (char c : digits) {
        int v = std::isdigit(static_cast<unsigned char>(c))             ? c - '0'
                : (hex && std::isxdigit(static_cast<unsigned char>(c))) ? std::tolower(c) - 'a' + 10
                                                                        : -1;
        if (v < 0 || cp > 0x10FFFF) {
          valid = false;
          break;
        }
        cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(v);
      }
      if (valid) {
        append_utf8(&out, cp);
        done = true;
      }
    } else {
      for (const auto& n : kNamed) {
        if (ref == n.name) {
          append_utf8(&out, n.cp);
          done = true;
          break;
        }
      }
    }
    if (done) {
      i = semi;
    } else {
      out += '&';
    }
  }
  return out;
}

std::string url_decode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+') {
      out += ' ';
    } else if (c == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      auto hex = [](char h) {
        return std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : std::tolower(h) - 'a' + 10;
      };
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string url_encode(std::string_view text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string html_to_text(std::string_view html, size_t max_chars) {
  static const std::set<std::string> kSkip = {"script",   "style",  "noscript", "head",  "svg",
                                              "template", "iframe", "nav",      "footer"};
  static const std::set<std::string> kBlock = {"p",     "div", "br",    "h1",         "h2",        "h3",     "h4",
                                               "h5",    "h6",  "tr",    "section",    "article",   "header", "footer",
                                               "ul",    "ol",  "table", "blockquote", "pre",       "main",   "nav",
                                               "aside", "hr",  "dd",    "dt",         "figcaption"};
  std::string raw;
  size_t i = 0;
  while (i < html.size()) {
    char c = html[i];
    if (c != '<') {
      raw += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;  // source line breaks are spaces in HTML
      ++i;
      continue;
    }
    if (html.substr(i, 4) == "<!--") {
      size_t e = html.find("-->", i + 4);
      i = e == std::string_view::npos ? html.size() : e + 3;
      continue;
    }
    Tag tag;
    if (!parse_tag(html, i, &tag)) {
      raw += c;
      ++i;
      continue;
    }
    i = tag.end;
    if (!tag.closing && kSkip.count(tag.name)) {
      size_t e = find_ci(html, "</" + tag.name, i);
      if (e == std::string_view::npos) break;
      size_t gt = html.find('>', e);
      i = gt == std::string_view::npos ? html.size() : gt + 1;
      continue;
    }
    if (tag.name == "li" && !tag.closing) raw += "\n- ";
    else if (kBlock.count(tag.name)) raw += '\n';
    else if (tag.name == "td" || tag.name == "th") raw += ' ';
  }
  std::string text = decode_entities(raw);
  // Collapse whitespace: spaces within a line, at most one blank line between paragraphs.
  std::string out;
  std::string line;
  int blank_lines = 0;
  auto flush_line = [&]() {
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (line.empty()) {
      if (!out.empty()) ++blank_lines;
    } else {
      if (!out.empty()) out += blank_lines > 0 ? "\n\n" : "\n";
      out += line;
      blank_lines = 0;
    }
    line.clear();
  };
  for (size_t k = 0; k < text.size(); ++k) {
    unsigned char c = static_cast<unsigned char>(text[k]);
    bool nbsp = c == 0xC2 && k + 1 < text.size() && static_cast<unsigned char>(text[k + 1]) == 0xA0;
    if (c == '\n') {
      flush_line();
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' || nbsp) {
      if (nbsp) ++k;
      if (!line.empty() && line.back() != ' ') line += ' ';
    } else {
      line += static_cast<char>(c);
    }
    if (out.size() > max_chars + 1024) break;
  }
  flush_line();
  if (out.size() > max_chars) {
    size_t cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
  }
  return out;
}

std::vector<SearchResult> parse_search_results(std::string_view html, const std::string& base_url) {
  struct Anchor {
    std::string attrs;
    std::string inner;
    size_t pos;
  };
  std::vector<Anchor> anchors;
  std::vector<std::pair<size_t, std::string>> snippets;  // position, text
  for (size_t i = html.find('<'); i != std::string_view::npos; i = html.find('<', i + 1)) {
    Tag tag;
    if (!parse_tag(html, i, &tag) || tag.closing) continue;
    if (tag.name == "a") {
      size_t end = 0;
      std::string_view inner = inner_html(html, tag.end, "a", &end);
      anchors.push_back({tag.attrs, std::string(inner), i});
      if (has_class(tag.attrs, "result__snippet")) snippets.emplace_back(i, html_to_text(inner, 400));
    } else if (has_class(tag.attrs, "result__snippet")) {
      size_t end = 0;
      std::string_view inner = inner_html(html, tag.end, tag.name, &end);
      snippets.emplace_back(i, html_to_text(inner, 400));
    }
  }
  bool ddg = false;
  for (const Anchor& a : anchors) ddg = ddg || has_class(a.attrs, "result__a");
  std::string search_origin = origin_of(base_url);
  std::vector<SearchResult> out;
  std::set<std::string> seen;
  for (size_t k = 0; k < anchors.size(); ++k) {
    const Anchor& a = anchors[k];
    if (ddg && !has_class(a.attrs, "result__a")) continue;
    std::string href = attribute(a.attrs, "href");
    if (href.find("ad_domain") != std::string::npos || href.find("/y.js") != std::string::npos) continue;
    std::string url = unwrap_redirect(resolve(href, base_url));
    if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) continue;
    if (!ddg && !search_origin.empty() && origin_of(url) == search_origin) continue;  // navigation links
    if (!seen.insert(url).second) continue;
    SearchResult r;
    r.url = url;
    r.title = html_to_text(a.inner, 200);
    if (ddg) {
      size_t next_pos = std::string_view::npos;
      for (size_t j = k + 1; j < anchors.size(); ++j) {
        if (has_class(anchors[j].attrs, "result__a")) {
          next_pos = anchors[j].pos;
          break;
        }
      }
      for (const auto& [pos, text] : snippets) {
        if (pos > a.pos && pos < next_pos) {
          r.snippet = text;
          break;
        }
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace sniper::agent
