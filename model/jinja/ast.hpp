// The parsed template: Jinja2's node types, reduced to what rendering needs.
#pragma once
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
  Constant, Name, List, Tuple, Dict, GetAttr, GetItem, Slice, Call, Filter, Test,
  Negate, Plus, Not, Binary, Compare, And, Or, Condition, Concat
};
enum class BinaryOp : std::uint8_t { Add, Sub, Mul, Div, FloorDiv, Mod, Pow };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  ExprPtr star_args, star_kwargs;  // *args, **kwargs
};

// operands by kind: List/Tuple/Concat items; Dict key, value, key, value...; GetAttr {object}; GetItem {object,
// index}; Slice {start, stop, step} (null when left out); Call {callee}; Filter/Test {input} (Filter: none in a
// filter block or block set, whose body is the input); Negate/Plus/Not {operand}; Binary/And/Or {left, right};
// Compare {first, then one per op}; Condition {test, then, otherwise (null when left out)}.
struct Expr {
  ExprKind kind;
  int line = 0;
  int height = 1;  // of the subtree: the parser refuses trees deep enough to exhaust the stack
  Value constant;
  std::string name;  // Name; GetAttr's attribute; Filter's or Test's name
  std::vector<ExprPtr> operands;
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
  Text, Output, If, For, Set, SetBlock, Macro, CallBlock, FilterBlock, Generation, Break, Continue
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct Branch {
  ExprPtr test;
  Body body;
};

// A macro's or a call block's signature and the special names its body refers to.
struct Signature {
  std::vector<std::string> parameters;
  std::vector<ExprPtr> defaults;  // one per parameter, null where none
  bool uses_caller = false, uses_varargs = false, uses_kwargs = false;
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;               // Text; Macro's name
  ExprPtr expr;                   // Output; Set's value; For's iterable; CallBlock's call; the filters of
                                  // SetBlock and FilterBlock (a Filter chain whose innermost has no input)
  ExprPtr condition;              // For's `if`
  Target target;                  // Set, SetBlock, For
  std::vector<Branch> branches;   // If: the if and each elif
  Body body, else_body;           // If's else, For's else
  Signature signature;            // Macro, CallBlock
};

struct Program {
  Body body;
};

// Throws ParseError. Checks what Jinja2 checks when compiling: filter and test names (outside `if` bodies and
// inline ifs), break and continue outside loops, assignments to `loop`.
std::unique_ptr<Program> parse(std::string_view source, const Options& options);

}  // namespace parley::jinja::ast
