// The grammar as a pushdown automaton over bytes, determinized lazily: a state is the set of stacks
// the grammar can be in after the text so far (each stack a list of return positions, interned so
// equal stacks share an id), and every (state, byte) step is computed once and remembered. Masks and
// recognizers both walk it; not thread-safe (CompiledGrammar locks around it).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/structured_output/grammar.hpp"

namespace parley::structured {

class PushdownAutomaton {
 public:
  static constexpr int kDead = -1;  // no stack accepts the text: a byte the grammar forbids

  explicit PushdownAutomaton(std::shared_ptr<const Grammar> grammar);

  int initial_state() const { return 0; }
  int advance(int state, uint8_t byte);
  int advance(int state, std::string_view bytes);                               // kDead as soon as a byte is refused
  bool accepting(int state) const { return states_[size_t(state)].accepting; }  // the text is a sentence
  bool can_continue(int state) const { return states_[size_t(state)].can_continue; }  // more bytes may follow
  size_t num_states() const { return states_.size(); }
  size_t num_stacks() const { return nodes_.size(); }

 private:
  struct Node {
    int pos;     // the element this stack waits on (a byte set after closure)
    int parent;  // the stack to return to when this rule's alternative ends; 0: none
  };
  struct State {
    std::vector<int> stacks;  // sorted node ids; 0 is the empty stack (accepted)
    bool accepting = false, can_continue = false;
    std::unique_ptr<std::array<int, 256>> next;  // per byte: the next state, kUnknown until computed
  };
  static constexpr int kUnknown = -2;

  int intern_node(int pos, int parent);
  int pop_ends(int pos, int parent);  // past each finished alternative to its caller's next element
  void closure(int stack, std::vector<int>& out);
  int intern_state(std::vector<int> stacks);

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, int> node_ids_;
  std::vector<State> states_;
  std::unordered_map<std::string, int> state_ids_;  // a state's stacks as bytes
  std::vector<int> work_;                           // closure's scratch
  std::vector<uint32_t> seen_;                      // per node: the closure pass that saw it
  uint32_t pass_ = 0;
};

}  // namespace parley::structured
