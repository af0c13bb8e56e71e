#include "engine/structured_output/pushdown.hpp"

#include <algorithm>
#include <cstring>

namespace parley::structured {

using Kind = GrammarElement::Kind;

PushdownAutomaton::PushdownAutomaton(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  nodes_.push_back({-1, 0});  // node 0: the empty stack
  seen_.push_back(0);
  std::vector<int> stacks;
  for (int start : grammar_->rules()[size_t(grammar_->root())].alternatives) closure(pop_ends(start, 0), stacks);
  intern_state(std::move(stacks));
}

int PushdownAutomaton::intern_node(int pos, int parent) {
  const uint64_t key = (uint64_t(uint32_t(pos)) << 32) | uint32_t(parent);
  const auto [it, added] = node_ids_.emplace(key, int(nodes_.size()));
  if (added) {
    nodes_.push_back({pos, parent});
    seen_.push_back(0);
  }
  return it->second;
}

int PushdownAutomaton::pop_ends(int pos, int parent) {
  const auto& elements = grammar_->elements();
  while (elements[size_t(pos)].kind == Kind::End) {
    if (parent == 0) return 0;
    pos = nodes_[size_t(parent)].pos;
    parent = nodes_[size_t(parent)].parent;
  }
  return intern_node(pos, parent);
}

// Every stack reachable from `stack` without reading a byte, kept when it waits on a byte (or is empty).
// A stack seen twice in one pass is expanded once: that ends loops through rules that match nothing.
void PushdownAutomaton::closure(int stack, std::vector<int>& out) {
  const auto& elements = grammar_->elements();
  const auto& rules = grammar_->rules();
  ++pass_;
  work_.assign(1, stack);
  while (!work_.empty()) {
    const int s = work_.back();
    work_.pop_back();
    if (seen_[size_t(s)] == pass_) continue;
    seen_[size_t(s)] = pass_;
    const Node node = nodes_[size_t(s)];
    if (s == 0 || elements[size_t(node.pos)].kind == Kind::Bytes) {
      out.push_back(s);
      continue;
    }
    const int ret = pop_ends(node.pos + 1, node.parent);  // a call in tail position returns straight to the caller's
    for (int start : rules[size_t(elements[size_t(node.pos)].index)].alternatives)
      work_.push_back(pop_ends(start, ret));
  }
}

int PushdownAutomaton::intern_state(std::vector<int> stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  if (stacks.empty()) return kDead;
  std::string key(stacks.size() * sizeof(int), '\0');
  std::memcpy(key.data(), stacks.data(), key.size());
  const auto [it, added] = state_ids_.emplace(std::move(key), int(states_.size()));
  if (added) {
    State st;
    st.accepting = stacks.front() == 0;
    st.can_continue = stacks.back() != 0;
    st.stacks = std::move(stacks);
    states_.push_back(std::move(st));
  }
  return it->second;
}

int PushdownAutomaton::advance(int state, uint8_t byte) {
  if (state == kDead) return kDead;
  State& st = states_[size_t(state)];
  if (!st.next) {
    st.next = std::make_unique<std::array<int, 256>>();
    st.next->fill(kUnknown);
  }
  if (const int known = (*st.next)[byte]; known != kUnknown) return known;
  const auto& elements = grammar_->elements();
  const auto& sets = grammar_->byte_sets();
  std::vector<int> next;
  for (int s : st.stacks) {
    if (s == 0) continue;
    const Node node = nodes_[size_t(s)];
    if (sets[size_t(elements[size_t(node.pos)].index)][byte]) closure(pop_ends(node.pos + 1, node.parent), next);
  }
  const int id = intern_state(std::move(next));  // may grow states_: index again, do not reuse `st`
  (*states_[size_t(state)].next)[byte] = id;
  return id;
}

int PushdownAutomaton::advance(int state, std::string_view bytes) {
  for (char c : bytes)
    if ((state = advance(state, uint8_t(c))) == kDead) break;
  return state;
}

bool Grammar::matches(std::string_view text) const {
  PushdownAutomaton automaton(std::make_shared<const Grammar>(*this));
  const int state = automaton.advance(automaton.initial_state(), text);
  return state != PushdownAutomaton::kDead && automaton.accepting(state);
}

}  // namespace parley::structured
