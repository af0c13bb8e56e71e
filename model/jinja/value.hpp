// The engine's value: Python's object model as far as chat templates reach it (None, bool, int, float,
// str and Markup, list/tuple/iterators, dict, and objects such as namespaces, macros and bound methods),
// with Jinja2's Undefined. Lists and objects are shared like Python references; dicts are never mutated.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace parley::jinja {

class Renderer;
struct ListData;
struct DictData;
class Object;
struct CallArgs;

enum class Kind : std::uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Object };
// The Python sequence a list value stands for: they print, compare, index and measure differently.
enum class SeqKind : std::uint8_t { List, Tuple, Iterator, ItemsView, KeysView, ValuesView };

struct Value {
  Kind kind = Kind::Undefined;
  bool markup = false;       // a markupsafe.Markup string (|safe, |escape): `+` HTML-escapes the plain operand
  std::int64_t integer = 0;  // Bool (0 or 1) and Int
  double real = 0;           // Float
  std::string text;          // String; for Undefined, the message its misuse raises (UndefinedError)
  std::shared_ptr<ListData> list;
  std::shared_ptr<DictData> dict;
  std::shared_ptr<Object> object;

  static Value undefined(std::string message);
  static Value none();
  static Value boolean(bool b);
  static Value of_int(std::int64_t i);
  static Value of_float(double d);
  static Value string(std::string s, bool markup = false);
  static Value sequence(std::vector<Value> items, SeqKind seq_kind = SeqKind::List);
  static Value tuple(std::vector<Value> items) { return sequence(std::move(items), SeqKind::Tuple); }
  static Value mapping(std::vector<std::pair<Value, Value>> items);
  static Value of_object(std::shared_ptr<Object> o);

  bool is_undefined() const { return kind == Kind::Undefined; }
  bool is_none() const { return kind == Kind::None; }
  bool is_string() const { return kind == Kind::String; }
  bool is_number() const { return kind == Kind::Bool || kind == Kind::Int || kind == Kind::Float; }
  bool is_integral() const { return kind == Kind::Bool || kind == Kind::Int; }  // Python's isinstance(x, int)
  bool is_list() const { return kind == Kind::List; }
  bool is_dict() const { return kind == Kind::Dict; }
  double as_double() const { return kind == Kind::Float ? real : static_cast<double>(integer); }
  SeqKind seq_kind() const;
  const std::vector<Value>& items() const;  // a List's elements
};

// Frees what a value holds one level at a time: dropping a list nested 100,000 deep must not recurse 100,000
// deep. The destructors of containers, scopes and objects hand their contents here.
void release_later(std::shared_ptr<void> held);
void release_later(Value& v);

struct ListData {
  ~ListData();
  std::vector<Value> items;
  SeqKind seq_kind = SeqKind::List;
  bool consumed = false;  // an Iterator iterates once
};

struct DictData {
  ~DictData();
  std::vector<std::pair<Value, Value>> items;  // in insertion order
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

// Namespaces, macros, loops and callables: what Python gives attributes or calls.
class Object {
 public:
  virtual ~Object() = default;
  virtual std::string type_name() const = 0;  // Python's type(x).__name__, for messages
  virtual std::string repr() const { return "<" + type_name() + " object>"; }
  // The attribute `name`, or nullopt when there is none (Jinja2 then tries x[name]).
  virtual std::optional<Value> attribute(std::string_view name) const { return std::nullopt; }
  virtual bool is_callable() const { return false; }
  virtual Value call(Renderer& renderer, CallArgs& args) const;
  virtual std::optional<std::int64_t> size() const { return std::nullopt; }  // len(x), where Python has one
  // Drops what the object holds: a namespace holding itself, or a macro held by the scope it closes over, are
  // reference cycles, broken when the render that made them ends.
  virtual void release() {}
};

// Python semantics over values. Misuse throws RenderError as Python raises TypeError and friends.
bool truthy(const Value& v);
std::string to_str(const Value& v);  // str(v)
std::string repr(const Value& v);    // repr(v)
std::string repr_string(std::string_view s);
std::string format_float(double d);            // repr(float): shortest round trip, Python's layout (1.0, 1e-05, 1e+16)
std::string type_name(const Value& v);         // type(v).__name__
std::string object_type_repr(const Value& v);  // Jinja2's "'dict object'" wording in undefined messages
bool equals(const Value& a, const Value& b);
bool is_hashable(const Value& v);
// a <op> b for op one of < <= > >=; raises TypeError where Python cannot order the two.
bool compare(const Value& a, const Value& b, std::string_view op);
// Python's iter(v) drained: list items, dict keys, a string's characters; an Undefined is empty.
std::vector<Value> iterate(const Value& v);
std::int64_t length(const Value& v);                       // len(v)
bool contains(const Value& container, const Value& item);  // item in container
[[noreturn]] void fail(std::string message);               // throws RenderError without a line yet
// Raises the UndefinedError an undefined value carries.
[[noreturn]] void fail_undefined(const Value& v);

}  // namespace parley::jinja
