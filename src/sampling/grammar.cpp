// SPDX-License-Identifier: MIT
#include "sampling/grammar.h"

#include <algorithm>

#include "base/check.h"

namespace sniper {

void Grammar::append_literal(Sequence* seq, std::string_view text) {
  for (char c : text) seq->push_back(byte(static_cast<uint8_t>(c)));
}

int32_t Grammar::add_rule(std::string name) {
  rules_.push_back(Rule{std::move(name), {}});
  return static_cast<int32_t>(rules_.size() - 1);
}

void Grammar::add_alternative(int32_t rule, const Sequence& seq) {
  CHECK(rule >= 0 && rule < n_rules(), "rule %d out of range", rule);
  rules_[static_cast<size_t>(rule)].alts.push_back(static_cast<int32_t>(elems_.size()));
  for (const Symbol& s : seq) {
    if (s.is_rule) {
      elems_.push_back({Element::Kind::kRule, s.rule});
    } else {
      auto [it, added] = set_index_.try_emplace(s.set.bits, static_cast<int32_t>(sets_.size()));
      if (added) sets_.push_back(s.set);
      elems_.push_back({Element::Kind::kBytes, it->second});
    }
  }
  elems_.push_back({Element::Kind::kEnd, 0});
}

std::vector<std::vector<int32_t>> Grammar::left_edges() const {
  const size_t n = rules_.size();
  // Nullable rules: fixpoint.
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (int32_t pos : rules_[r].alts) {
        bool all = true;
        for (int32_t p = pos; elems_[static_cast<size_t>(p)].kind != Element::Kind::kEnd; ++p) {
          const Element& e = elems_[static_cast<size_t>(p)];
          if (e.kind == Element::Kind::kBytes || !nullable[static_cast<size_t>(e.index)]) {
            all = false;
            break;
          }
        }
        if (all) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  // Left edges: r -> s when s can be reached from r without consuming a byte.
  std::vector<std::vector<int32_t>> left(n);
  for (size_t r = 0; r < n; ++r) {
    for (int32_t pos : rules_[r].alts) {
      for (int32_t p = pos; elems_[static_cast<size_t>(p)].kind == Element::Kind::kRule; ++p) {
        const int32_t s = elems_[static_cast<size_t>(p)].index;
        left[r].push_back(s);
        if (!nullable[static_cast<size_t>(s)]) break;
      }
    }
  }
  return left;
}

size_t Grammar::left_depth() const {
  // The longest path of left edges (a DAG once validate() passed), by an iterative DFS.
  const std::vector<std::vector<int32_t>> left = left_edges();
  const size_t n = left.size();
  std::vector<size_t> depth(n, 0);
  std::vector<uint8_t> state(n, 0);  // 0 new, 1 open, 2 done
  size_t best = 0;
  for (size_t start = 0; start < n; ++start) {
    if (state[start] != 0) continue;
    std::vector<std::pair<size_t, size_t>> path = {{start, 0}};
    state[start] = 1;
    while (!path.empty()) {
      auto& [r, i] = path.back();
      if (i == left[r].size()) {
        size_t d = 1;
        for (int32_t s : left[r]) d = std::max(d, depth[static_cast<size_t>(s)] + 1);
        depth[r] = d;
        best = std::max(best, d);
        state[r] = 2;
        path.pop_back();
        continue;
      }
      const auto s = static_cast<size_t>(left[r][i++]);
      if (state[s] == 0) {
        state[s] = 1;
        path.push_back({s, 0});
      }
    }
  }
  return best;
}

Status Grammar::validate() const {
  const size_t n = rules_.size();
  if (n == 0) return make_error("the grammar has no rules");
  if (root_ < 0 || static_cast<size_t>(root_) >= n) return make_error("the grammar's root %d is not a rule", root_);
  for (size_t r = 0; r < n; ++r) {
    if (rules_[r].alts.empty()) return make_error("grammar rule '%s' has no alternatives", rules_[r].name.c_str());
  }
  for (const Element& e : elems_) {
    if (e.kind == Element::Kind::kRule && (e.index < 0 || static_cast<size_t>(e.index) >= n)) {
      return make_error("a grammar rule references rule %d, which does not exist", e.index);
    }
  }
  // A cycle of left edges is left recursion (the matcher would loop).
  const std::vector<std::vector<int32_t>> left = left_edges();
  std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
  std::vector<std::pair<size_t, size_t>> path;
  for (size_t start = 0; start < n; ++start) {
    if (color[start] != 0) continue;
    path.push_back({start, 0});
    color[start] = 1;
    while (!path.empty()) {
      auto& [r, i] = path.back();
      if (i == left[r].size()) {
        color[r] = 2;
        path.pop_back();
        continue;
      }
      const auto s = static_cast<size_t>(left[r][i++]);
      if (color[s] == 1) return make_error("grammar rule '%s' is left-recursive", rules_[s].name.c_str());
      if (color[s] == 0) {
        color[s] = 1;
        path.push_back({s, 0});
      }
    }
  }
  return ok_status();
}

void GrammarMatcher::TopSet::clear() {
  count_ = 0;
  if (++gen_ == 0) {  // wrapped: forget every slot once
    std::fill(gens_.begin(), gens_.end(), 0u);
    gen_ = 1;
  }
}

void GrammarMatcher::TopSet::grow() {
  const size_t n = keys_.empty() ? 64 : keys_.size() * 2;
  std::vector<uint64_t> old_keys;
  old_keys.swap(keys_);
  std::vector<uint32_t> old_gens;
  old_gens.swap(gens_);
  keys_.assign(n, 0);
  gens_.assign(n, 0);
  count_ = 0;
  for (size_t i = 0; i < old_keys.size(); ++i) {
    if (old_gens[i] != gen_) continue;
    const uint64_t k = old_keys[i];
    insert(Top{static_cast<int32_t>(k >> 32), static_cast<int32_t>(k & 0xffffffffu)});
  }
}

bool GrammarMatcher::TopSet::insert(const Top& t) {
  if ((count_ + 1) * 2 > keys_.size()) grow();
  const uint64_t k = key(t);
  const size_t mask = keys_.size() - 1;
  // Fibonacci hashing spreads the (pos, parent) pairs, which are small and dense.
  for (size_t i = static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 20) & mask;; i = (i + 1) & mask) {
    if (gens_[i] != gen_) {
      gens_[i] = gen_;
      keys_[i] = k;
      ++count_;
      return true;
    }
    if (keys_[i] == k) return false;
  }
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  CHECK(grammar_ != nullptr, "GrammarMatcher needs a grammar");
  seen_.clear();
  for (int32_t pos : grammar_->alternatives(grammar_->root())) settle(pos, -1, &stacks_, 0);
  std::sort(stacks_.begin(), stacks_.end(),
            [](const Top& a, const Top& b) { return a.pos != b.pos ? a.pos < b.pos : a.parent < b.parent; });
  stacks_.erase(std::unique(stacks_.begin(), stacks_.end()), stacks_.end());
}

void GrammarMatcher::settle(int32_t pos, int32_t parent, std::vector<Top>* out, int depth) {
  // Bounded by the grammar: validate() rules out left recursion, so each nested call descends
  // into a different rule before a byte is consumed.
  CHECK(depth <= 4 * grammar_->n_rules() + 64, "grammar expansion did not terminate (left recursion?)");
  for (;;) {
    const Grammar::Element& e = grammar_->element(pos);
    if (e.kind == Grammar::Element::Kind::kBytes) {
      const Top t{pos, parent};
      if (seen_.insert(t)) out->push_back(t);
      return;
    }
    if (e.kind == Grammar::Element::Kind::kEnd) {
      if (parent < 0) {
        const Top t{-1, -1};
        if (seen_.insert(t)) out->push_back(t);
        return;
      }
      const Frame f = frames_[static_cast<size_t>(parent)];
      pos = f.pos;
      parent = f.parent;
      continue;
    }
    // A rule reference: expand every alternative. A reference that ends its alternative is a
    // tail call (nothing to resume), so no frame is pushed.
    int32_t child_parent = parent;
    if (grammar_->element(pos + 1).kind != Grammar::Element::Kind::kEnd) {
      frames_.push_back({pos + 1, parent});
      child_parent = static_cast<int32_t>(frames_.size() - 1);
    }
    for (int32_t alt : grammar_->alternatives(e.index)) settle(alt, child_parent, out, depth + 1);
    return;
  }
}

bool GrammarMatcher::step(const std::vector<Top>& from, uint8_t byte, std::vector<Top>* to) {
  to->clear();
  seen_.clear();
  for (const Top& t : from) {
    if (t.pos < 0) continue;
    if (!grammar_->set(grammar_->element(t.pos).index).has(byte)) continue;
    settle(t.pos + 1, t.parent, to, 0);
  }
  return !to->empty();
}

bool GrammarMatcher::can_accept(std::string_view bytes) {
  if (bytes.empty()) return true;
  const size_t mark = frames_.size();
  const std::vector<Top>* cur = &stacks_;
  bool ok = true;
  for (size_t i = 0; i < bytes.size() && ok; ++i) {
    std::vector<Top>* next = (i % 2 == 0) ? &scratch_a_ : &scratch_b_;
    ok = step(*cur, static_cast<uint8_t>(bytes[i]), next);
    cur = next;
  }
  frames_.resize(mark);
  return ok;
}

bool GrammarMatcher::accept(std::string_view bytes) {
  if (bytes.empty()) return true;
  const size_t mark = frames_.size();
  std::vector<Top> cur = stacks_;
  std::vector<Top> next;
  for (char c : bytes) {
    if (!step(cur, static_cast<uint8_t>(c), &next)) {
      frames_.resize(mark);
      return false;
    }
    cur.swap(next);
  }
  stacks_ = std::move(cur);
  return true;
}

bool GrammarMatcher::is_complete() const {
  return std::any_of(stacks_.begin(), stacks_.end(), [](const Top& t) { return t.pos < 0; });
}

ByteSet GrammarMatcher::next_bytes() const {
  ByteSet out;
  for (const Top& t : stacks_) {
    if (t.pos < 0) continue;
    const ByteSet& s = grammar_->set(grammar_->element(t.pos).index);
    for (size_t w = 0; w < 4; ++w) out.bits[w] |= s.bits[w];
  }
  return out;
}

}  // namespace sniper
