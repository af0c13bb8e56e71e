#include "model/jinja/value.hpp"

#include "model/jinja/jinja.hpp"
#include "model/jinja/utf8.hpp"

namespace parley::jinja {

namespace {

// Python raises RecursionError past about this depth when printing or comparing nested values; so does this
// engine, counting across nested namespaces' reprs too (per thread: renders on other threads are apart).
constexpr int kMaxRecursion = 200;
thread_local int recursion_depth = 0;

struct RecursionGuard {
  explicit RecursionGuard(const char* what) {
    if (++recursion_depth > kMaxRecursion) {
      --recursion_depth;
      fail(std::string("maximum recursion depth exceeded ") + what);
    }
  }
  ~RecursionGuard() { --recursion_depth; }
};

const std::vector<Value> kNoItems;

std::string repr_of_items(const std::vector<Value>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += repr(items[i]);
  }
  return out;
}

std::string list_repr(const ListData& list) {
  const std::string inner = repr_of_items(list.items);
  switch (list.seq_kind) {
    case SeqKind::List:
      return "[" + inner + "]";
    case SeqKind::Tuple:
      return "(" + inner + (list.items.size() == 1 ? ",)" : ")");
    case SeqKind::Iterator:
      return "<generator object>";
    case SeqKind::ItemsView:
      return "dict_items([" + inner + "])";
    case SeqKind::KeysView:
      return "dict_keys([" + inner + "])";
    case SeqKind::ValuesView:
      return "dict_values([" + inner + "])";
  }
  return inner;
}

bool sequence_equals(const ListData& a, const ListData& b) {
  if (&a == &b) return true;
  if (a.seq_kind != b.seq_kind || a.seq_kind == SeqKind::Iterator) return false;
  if (a.items.size() != b.items.size()) return false;
  for (std::size_t i = 0; i < a.items.size(); ++i)
    if (!equals(a.items[i], b.items[i])) return false;
  return true;
}

bool dict_equals(const DictData& a, const DictData& b) {
  if (a.items.size() != b.items.size()) return false;
  for (const auto& [key, value] : a.items) {
    const Value* other = b.find(key);
    if (!other || !equals(value, *other)) return false;
  }
  return true;
}

template <typename T>
bool apply_order(const T& a, const T& b, std::string_view op) {
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  return a >= b;
}

}  // namespace

Value Value::undefined(std::string message) {
  Value v;
  v.text = std::move(message);
  return v;
}
Value Value::none() {
  Value v;
  v.kind = Kind::None;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind = Kind::Bool;
  v.integer = b;
  return v;
}
Value Value::of_int(std::int64_t i) {
  Value v;
  v.kind = Kind::Int;
  v.integer = i;
  return v;
}
Value Value::of_float(double d) {
  Value v;
  v.kind = Kind::Float;
  v.real = d;
  return v;
}
Value Value::string(std::string s, bool markup) {
  Value v;
  v.kind = Kind::String;
  v.text = std::move(s);
  v.markup = markup;
  return v;
}
Value Value::sequence(std::vector<Value> items, SeqKind seq_kind) {
  Value v;
  v.kind = Kind::List;
  v.list = std::make_shared<ListData>();
  v.list->items = std::move(items);
  v.list->seq_kind = seq_kind;
  return v;
}
Value Value::mapping(std::vector<std::pair<Value, Value>> items) {
  Value v;
  v.kind = Kind::Dict;
  v.dict = std::make_shared<DictData>();
  v.dict->items = std::move(items);
  return v;
}
Value Value::of_object(std::shared_ptr<Object> o) {
  Value v;
  v.kind = Kind::Object;
  v.object = std::move(o);
  return v;
}

SeqKind Value::seq_kind() const { return list ? list->seq_kind : SeqKind::List; }
const std::vector<Value>& Value::items() const { return list ? list->items : kNoItems; }

namespace {
thread_local std::vector<std::shared_ptr<void>>* release_queue = nullptr;  // set while one is being drained
}  // namespace

void release_later(std::shared_ptr<void> held) {
  if (!held) return;
  if (release_queue) {
    release_queue->push_back(std::move(held));
    return;
  }
  std::vector<std::shared_ptr<void>> queue;
  release_queue = &queue;
  queue.push_back(std::move(held));
  while (!queue.empty()) {
    std::shared_ptr<void> next = std::move(queue.back());
    queue.pop_back();
    next.reset();  // a destructor run here queues what its object held
  }
  release_queue = nullptr;
}

void release_later(Value& v) {
  if (v.list) release_later(std::shared_ptr<void>(std::move(v.list)));
  if (v.dict) release_later(std::shared_ptr<void>(std::move(v.dict)));
  if (v.object) release_later(std::shared_ptr<void>(std::move(v.object)));
}

ListData::~ListData() {
  for (Value& item : items) release_later(item);
}

DictData::~DictData() {
  for (auto& [key, value] : items) {
    release_later(key);
    release_later(value);
  }
}

const Value* DictData::find(const Value& key) const {
  if (key.kind == Kind::String) return find(std::string_view(key.text));
  for (const auto& [k, v] : items)
    if (equals(k, key)) return &v;
  return nullptr;
}

const Value* DictData::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k.kind == Kind::String && k.text == key) return &v;
  return nullptr;
}

void DictData::set(Value key, Value value) {
  for (auto& [k, v] : items)
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  items.emplace_back(std::move(key), std::move(value));
}

Value Object::call(Renderer&, CallArgs&) const { fail("'" + type_name() + "' object is not callable"); }

void fail(std::string message) { throw RenderError(message); }
void fail_undefined(const Value& v) { fail(v.text.empty() ? "undefined value" : v.text); }

bool truthy(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
    case Kind::Int:
      return v.integer != 0;
    case Kind::Float:
      return v.real != 0;
    case Kind::String:
      return !v.text.empty();
    case Kind::List:
      return v.list->seq_kind == SeqKind::Iterator || !v.list->items.empty();
    case Kind::Dict:
      return !v.dict->items.empty();
    case Kind::Object:
      return v.object->size().value_or(1) != 0;
  }
  return false;
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined:
      return "";
    case Kind::None:
      return "None";
    case Kind::Bool:
      return v.integer ? "True" : "False";
    case Kind::Int:
      return std::to_string(v.integer);
    case Kind::Float:
      return format_float(v.real);
    case Kind::String:
      return v.text;
    default:
      break;
  }
  RecursionGuard guard("while getting the repr of an object");
  if (v.kind == Kind::List) return list_repr(*v.list);
  if (v.kind == Kind::Object) return v.object->repr();
  std::string out = "{";
  for (std::size_t i = 0; i < v.dict->items.size(); ++i) {
    if (i) out += ", ";
    out += repr(v.dict->items[i].first) + ": " + repr(v.dict->items[i].second);
  }
  return out + "}";
}

std::string repr(const Value& v) {
  if (v.kind == Kind::Undefined) return "Undefined";
  if (v.kind == Kind::String) return v.markup ? "Markup(" + repr_string(v.text) + ")" : repr_string(v.text);
  return to_str(v);
}

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined:
      return "Undefined";
    case Kind::None:
      return "NoneType";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return v.markup ? "Markup" : "str";
    case Kind::Dict:
      return "dict";
    case Kind::Object:
      return v.object->type_name();
    case Kind::List:
      break;
  }
  switch (v.list->seq_kind) {
    case SeqKind::List:
      return "list";
    case SeqKind::Tuple:
      return "tuple";
    case SeqKind::Iterator:
      return "generator";
    case SeqKind::ItemsView:
      return "dict_items";
    case SeqKind::KeysView:
      return "dict_keys";
    case SeqKind::ValuesView:
      return "dict_values";
  }
  return "object";
}

std::string object_type_repr(const Value& v) {
  if (v.is_none()) return "None";
  return type_name(v) + " object";
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind == Kind::Float || b.kind == Kind::Float) return a.as_double() == b.as_double();
    return a.integer == b.integer;
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::Undefined:
    case Kind::None:
      return true;
    case Kind::String:
      return a.text == b.text;
    case Kind::List: {
      RecursionGuard guard("in comparison");
      return sequence_equals(*a.list, *b.list);
    }
    case Kind::Dict: {
      RecursionGuard guard("in comparison");
      return a.dict == b.dict || dict_equals(*a.dict, *b.dict);
    }
    case Kind::Object:
      return a.object == b.object;
    default:
      return false;
  }
}

bool is_hashable(const Value& v) {
  if (v.kind == Kind::Dict) return false;
  if (v.kind != Kind::List) return true;
  if (v.list->seq_kind == SeqKind::Iterator) return true;
  if (v.list->seq_kind != SeqKind::Tuple) return false;
  RecursionGuard guard("while hashing");
  for (const Value& item : v.list->items)
    if (!is_hashable(item)) return false;
  return true;
}

bool compare(const Value& a, const Value& b, std::string_view op) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) {
    if (a.kind == Kind::Float || b.kind == Kind::Float) return apply_order(a.as_double(), b.as_double(), op);
    return apply_order(a.integer, b.integer, op);
  }
  if (a.is_string() && b.is_string()) return apply_order(a.text, b.text, op);  // UTF-8 order is code point order
  const bool ordered_sequences = a.is_list() && b.is_list() && a.seq_kind() == b.seq_kind() &&
                                 (a.seq_kind() == SeqKind::List || a.seq_kind() == SeqKind::Tuple);
  if (!ordered_sequences)
    fail("'" + std::string(op) + "' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) +
         "'");
  RecursionGuard guard("in comparison");
  const auto& x = a.items();
  const auto& y = b.items();
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i)
    if (!equals(x[i], y[i])) return compare(x[i], y[i], op);
  return apply_order(x.size(), y.size(), op);
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined:
      return {};
    case Kind::List:
      if (v.list->seq_kind == SeqKind::Iterator) {
        if (v.list->consumed) return {};
        v.list->consumed = true;
      }
      return v.list->items;
    case Kind::Dict: {
      std::vector<Value> keys;
      keys.reserve(v.dict->items.size());
      for (const auto& item : v.dict->items) keys.push_back(item.first);
      return keys;
    }
    case Kind::String: {
      std::vector<Value> chars;
      for (char32_t c : utf8::decode(v.text)) {
        std::string one;
        utf8::append(one, c);
        chars.push_back(Value::string(std::move(one), v.markup));
      }
      return chars;
    }
    default:
      fail("'" + type_name(v) + "' object is not iterable");
  }
}

std::int64_t length(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined:
      return 0;
    case Kind::String:
      return static_cast<std::int64_t>(utf8::length(v.text));
    case Kind::Dict:
      return static_cast<std::int64_t>(v.dict->items.size());
    case Kind::List:
      if (v.list->seq_kind != SeqKind::Iterator) return static_cast<std::int64_t>(v.list->items.size());
      break;
    case Kind::Object:
      if (auto n = v.object->size()) return *n;
      break;
    default:
      break;
  }
  fail("object of type '" + type_name(v) + "' has no len()");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case Kind::String:
      if (!item.is_string()) fail("'in <string>' requires string as left operand, not " + type_name(item));
      return container.text.find(item.text) != std::string::npos;
    case Kind::Dict:
      if (!is_hashable(item)) fail("unhashable type: '" + type_name(item) + "'");
      return container.dict->find(item) != nullptr;
    case Kind::List:
    case Kind::Undefined:
      for (const Value& element : iterate(container))
        if (equals(element, item)) return true;
      return false;
    default:
      fail("argument of type '" + type_name(container) + "' is not iterable");
  }
}

}  // namespace parley::jinja
