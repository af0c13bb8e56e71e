// The parsed template: Jinja2's node types, reduced to what rendering needs.
#pragma once
#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/jinja/value.hpp"

namespace parley::jinja {
struct Options;
using FilterFunction = Value (*)(Renderer&, const Value& input, CallArgs& args);
using TestFunction = bool (*)(Renderer&, const Value& input, CallArgs& args);
}  // namespace parley::jinja

namespace parley::jinja::ast {

enum class ExprKind : std::uint8_t {
  Constant,
  Name,
  List,
  Tuple,
  Dict,
  GetAttr,
  GetItem,
  Slice,
  Call,
  Filter,
  Test,
  Negate,
  Plus,
  Not,
  Binary,
  Compare,
  And,
  Or,
  Condition,
  Concat
};
enum class BinaryOp : std::uint8_t { Add, Sub, Mul, Div, FloorDiv, Mod, Pow };

struct Expr;
struct Stmt;
using ExprPtr = Expr*;  // nodes live in their Program's pools, freed with it

// A node's operands: most have three or fewer, kept inline; longer lists (list literals, ~ chains) spill over.
class Operands {
 public:
  void push_back(Expr* operand) {
    if (size_ < kInline)
      inline_[size_] = operand;
    else
      spill_.push_back(operand);
    ++size_;
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Expr* operator[](std::size_t i) const { return i < kInline ? inline_[i] : spill_[i - kInline]; }

  class Iterator {
   public:
    Iterator(const Operands& operands, std::size_t i) : operands_(&operands), i_(i) {}
    Expr* operator*() const { return (*operands_)[i_]; }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return i_ != other.i_; }

   private:
    const Operands* operands_;
    std::size_t i_;
  };
  Iterator begin() const { return {*this, 0}; }
  Iterator end() const { return {*this, size_}; }

 private:
  static constexpr std::size_t kInline = 3;
  std::array<Expr*, kInline> inline_{};
  std::vector<Expr*> spill_;
  std::size_t size_ = 0;
};

// Nodes allocated in blocks: parsing makes one allocation per block rather than per node.
template <typename Node>
class NodePool {
 public:
  Node* make() {
    if (used_ == kBlock) {
      blocks_.push_back(std::make_unique<Node[]>(kBlock));
      used_ = 0;
    }
    return &blocks_.back()[used_++];
  }

 private:
  static constexpr std::size_t kBlock = 64;
  std::vector<std::unique_ptr<Node[]>> blocks_;
  std::size_t used_ = kBlock;
};

struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  ExprPtr star_args = nullptr, star_kwargs = nullptr;  // *args, **kwargs
};

// operands by kind: List/Tuple/Concat items; Dict key, value, key, value...; GetAttr {object}; GetItem {object,
// index}; Slice {start, stop, step} (null when left out); Call {callee}; Filter/Test {input} (Filter: none in a
// filter block or block set, whose body is the input); Negate/Plus/Not {operand}; Binary/And/Or {left, right};
// Compare {first, then one per op}; Condition {test, then, otherwise (null when left out)}.
struct Expr {
  ExprKind kind = ExprKind::Constant;
  int line = 0;
  int height = 1;  // of the subtree: the parser refuses trees deep enough to exhaust the stack
  Value constant;
  std::string name;  // Name; GetAttr's attribute; Filter's or Test's name
  Operands operands;
  Arguments arguments;  // Call, Filter, Test
  BinaryOp op = BinaryOp::Add;
  std::vector<std::string> compare_ops;  // == != < <= > >= in notin
  FilterFunction filter = nullptr;       // null: no filter of that name (raises when evaluated)
  TestFunction test = nullptr;
};

// A `set` or `for` target: a name, ns.attribute, or a tuple of targets.
struct Target {
  enum class Kind : std::uint8_t { Name, Attribute, Tuple } kind = Kind::Name;
  std::string name, attribute;
  std::vector<Target> items;
  int line = 0;
};

enum class StmtKind : std::uint8_t {
  Text,
  Output,
  If,
  For,
  Set,
  SetBlock,
  With,
  Macro,
  CallBlock,
  FilterBlock,
  Generation,
  Break,
  Continue
};

using Body = std::vector<Stmt*>;

struct Branch {
  ExprPtr test = nullptr;
  Body body;
};

// A macro's or a call block's signature and the special names its body refers to.
struct Signature {
  std::vector<std::string> parameters;
  std::vector<ExprPtr> defaults;  // one per parameter, null where none
  bool uses_caller = false, uses_varargs = false, uses_kwargs = false;
};

struct Stmt {
  StmtKind kind = StmtKind::Text;
  int line = 0;
  std::string text;              // Text; Macro's name
  ExprPtr expr = nullptr;        // Output; Set's value; For's iterable; CallBlock's call; the filters of
                                 // SetBlock and FilterBlock (a Filter chain whose innermost has no input)
  ExprPtr condition = nullptr;   // For's `if`
  Target target;                 // Set, SetBlock, For
  std::vector<Branch> branches;  // If: the if and each elif
  std::vector<std::pair<Target, ExprPtr>> assignments;  // With
  Body body, else_body;                                 // If's else, For's else
  Signature signature;                                  // Macro, CallBlock
};

struct Program {
  Body body;
  NodePool<Expr> exprs;
  NodePool<Stmt> stmts;
};

// Throws ParseError. Checks what Jinja2 checks when compiling: filter and test names (outside `if` bodies and
// inline ifs), break and continue outside loops, assignments to `loop`.
std::unique_ptr<Program> parse(std::string_view source, const Options& options);

}  // namespace parley::jinja::ast
