// Sequence filters. Those Jinja2 writes as generators (map, select, reject, selectattr, rejectattr, unique,
// items, batch, slice, reverse) give an Iterator: always true, no length, one pass, as a Python generator.
#include <algorithm>

#include "model/jinja/filters.hpp"
#include "model/jinja/utf8.hpp"

namespace parley::jinja::filters {

namespace {

Value iterator(std::vector<Value> items) { return Value::sequence(std::move(items), SeqKind::Iterator); }

// Jinja2's make_multi_attrgetter: "a,b.c" gives the list [item.a, item.b.c] (one element without attributes).
Value multi_attribute_key(Renderer& renderer, const Value& item, const Value& attribute, bool case_sensitive) {
  std::vector<Value> paths;
  if (attribute.is_string()) {
    std::size_t start = 0;
    for (std::size_t comma; (comma = attribute.text.find(',', start)) != std::string::npos; start = comma + 1)
      paths.push_back(Value::string(attribute.text.substr(start, comma - start)));
    paths.push_back(Value::string(attribute.text.substr(start)));
  } else {
    paths.push_back(attribute);
  }
  std::vector<Value> key;
  for (const Value& path : paths) {
    Value part = get_attribute_path(renderer, item, path);
    key.push_back(case_sensitive ? part : lower_if_string(part));
  }
  return Value::sequence(std::move(key));
}

std::vector<Value> sorted_by(std::vector<Value> items, const std::vector<Value>& keys, bool reverse) {
  std::vector<std::size_t> order(items.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Python's sorted is stable in both directions and asks only `<`.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return reverse ? compare(keys[b], keys[a], "<") : compare(keys[a], keys[b], "<");
  });
  std::vector<Value> out;
  out.reserve(items.size());
  for (std::size_t i : order) out.push_back(std::move(items[i]));
  return out;
}

Value min_or_max(Renderer& renderer, const Value& v, CallArgs& args, bool want_max) {
  const BoundArgs a(want_max ? "max" : "min", args, {"case_sensitive", "attribute"});
  const std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  std::size_t best = 0;
  Value best_key;
  for (std::size_t i = 0; i < items.size(); ++i) {
    Value key = get_attribute_path(renderer, items[i], a.get_or(1, Value::none()));
    if (!truthy(a.get(0))) key = lower_if_string(key);
    if (i == 0 || compare(key, best_key, want_max ? ">" : "<")) {  // the first of equals wins, as in Python
      best = i;
      best_key = std::move(key);
    }
  }
  return items[best];
}

// select/reject (attribute_first false) and selectattr/rejectattr: keep the items whose test passes (select).
Value select_or_reject(Renderer& renderer, const Value& v, CallArgs& args, bool keep_passing, bool by_attribute) {
  if (!truthy(v)) return iterator({});
  std::size_t offset = 0;
  Value attribute;
  if (by_attribute) {
    if (args.positional.empty()) fail("Missing parameter for attribute name");
    attribute = args.positional[0];
    offset = 1;
  }
  std::optional<std::string> test_name;
  CallArgs test_args;
  if (args.positional.size() > offset) {
    test_name = to_str(args.positional[offset]);
    test_args.positional.assign(args.positional.begin() + offset + 1, args.positional.end());
  }
  test_args.keywords = args.keywords;
  std::vector<Value> kept;
  for (const Value& item : iterate(v)) {
    const Value subject = by_attribute ? get_attribute_path(renderer, item, attribute) : item;
    CallArgs call_args = test_args;
    const bool passed = test_name ? renderer.apply_test(*test_name, subject, call_args) : truthy(subject);
    if (passed == keep_passing) kept.push_back(item);
  }
  return iterator(std::move(kept));
}

}  // namespace

Value get_attribute_path(Renderer& renderer, const Value& item, const Value& path) {
  if (path.is_none()) return item;
  if (!path.is_string()) return renderer.getitem(item, path);
  Value current = item;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.text.find('.', start);
    const std::string part = path.text.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool digits = !part.empty() && part.size() < 18 && part.find_first_not_of("0123456789") == std::string::npos;
    current = renderer.getitem(current, digits ? Value::of_int(std::stoll(part)) : Value::string(part));
    if (dot == std::string::npos) return current;
    start = dot + 1;
  }
}

Value lower_if_string(const Value& v) { return v.is_string() ? Value::string(utf8::lower(v.text), v.markup) : v; }

Value batch(Renderer& renderer, const Value& v, CallArgs& args) {
  const BoundArgs a("batch", args, {"linecount", "fill_with"});
  const std::int64_t line_count = to_index(a.get(0), "linecount");
  std::vector<Value> batches, current;
  for (const Value& item : iterate(v)) {
    if (static_cast<std::int64_t>(current.size()) == line_count)
      batches.push_back(Value::sequence(std::exchange(current, {})));
    current.push_back(item);
  }
  if (!current.empty()) {
    if (a.given(1) && !a.get(1).is_none()) {
      renderer.count_steps(static_cast<long>(std::min<std::int64_t>(line_count, INT32_MAX)));
      while (static_cast<std::int64_t>(current.size()) < line_count) current.push_back(a.get(1));
    }
    batches.push_back(Value::sequence(std::move(current)));
  }
  return iterator(std::move(batches));
}

Value dictsort(Renderer&, const Value& v, CallArgs& args) {
  const BoundArgs a("dictsort", args, {"case_sensitive", "by", "reverse"});
  const std::string by = a.given(1) ? to_str(a.get(1)) : "key";
  if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_dict()) fail("'" + type_name(v) + "' object has no attribute 'items'");
  std::vector<Value> items, keys;
  for (const auto& [key, value] : v.dict->items) {
    items.push_back(Value::tuple({key, value}));
    const Value& sort_key = by == "key" ? key : value;
    keys.push_back(truthy(a.get(0)) ? sort_key : lower_if_string(sort_key));
  }
  return Value::sequence(sorted_by(std::move(items), keys, truthy(a.get(2))));
}

Value first(Renderer&, const Value& v, CallArgs& args) {
  BoundArgs("first", args, {});
  const std::vector<Value> items = iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value last(Renderer&, const Value& v, CallArgs& args) {
  BoundArgs("last", args, {});
  if (v.is_list() && v.seq_kind() == SeqKind::Iterator) fail("'generator' object is not reversible");
  const std::vector<Value> items = iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value join(Renderer& renderer, const Value& v, CallArgs& args) {
  const BoundArgs a("join", args, {"d", "attribute"});
  const std::string separator = a.given(0) ? to_str(a.get(0)) : "";
  std::string out;
  bool first_item = true;
  for (const Value& item : iterate(v)) {
    if (!first_item) out += separator;
    first_item = false;
    out += to_str(a.given(1) && !a.get(1).is_none() ? get_attribute_path(renderer, item, a.get(1)) : item);
  }
  renderer.charge_for_size(out.size());
  return Value::string(std::move(out));
}

Value items(Renderer&, const Value& v, CallArgs& args) {
  BoundArgs("items", args, {});
  if (v.is_undefined()) return iterator({});
  if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
  std::vector<Value> pairs;
  for (const auto& [key, value] : v.dict->items) pairs.push_back(Value::tuple({key, value}));
  return iterator(std::move(pairs));
}

Value list(Renderer&, const Value& v, CallArgs& args) {
  BoundArgs("list", args, {});
  return Value::sequence(iterate(v));
}

Value map(Renderer& renderer, const Value& v, CallArgs& args) {
  if (!truthy(v)) return iterator({});
  std::vector<Value> out;
  const auto keyword = [&](std::string_view name) -> const Value* {
    for (const auto& [key, value] : args.keywords)
      if (key == name) return &value;
    return nullptr;
  };
  if (args.positional.empty() && keyword("attribute")) {
    const Value* fallback = keyword("default");
    for (const auto& [key, value] : args.keywords)
      if (key != "attribute" && key != "default") fail("Unexpected keyword argument '" + key + "'");
    for (const Value& item : iterate(v)) {
      Value mapped = get_attribute_path(renderer, item, *keyword("attribute"));
      out.push_back(fallback && !fallback->is_none() && mapped.is_undefined() ? *fallback : std::move(mapped));
    }
    return iterator(std::move(out));
  }
  if (args.positional.empty()) fail("map requires a filter argument");
  const std::string filter_name = to_str(args.positional[0]);
  CallArgs filter_args{{args.positional.begin() + 1, args.positional.end()}, args.keywords};
  for (const Value& item : iterate(v)) {
    CallArgs call_args = filter_args;
    out.push_back(renderer.apply_filter(filter_name, item, call_args));
  }
  return iterator(std::move(out));
}

Value max(Renderer& renderer, const Value& v, CallArgs& args) { return min_or_max(renderer, v, args, true); }
Value min(Renderer& renderer, const Value& v, CallArgs& args) { return min_or_max(renderer, v, args, false); }
Value select(Renderer& r, const Value& v, CallArgs& args) { return select_or_reject(r, v, args, true, false); }
Value reject(Renderer& r, const Value& v, CallArgs& args) { return select_or_reject(r, v, args, false, false); }
Value selectattr(Renderer& r, const Value& v, CallArgs& args) { return select_or_reject(r, v, args, true, true); }
Value rejectattr(Renderer& r, const Value& v, CallArgs& args) { return select_or_reject(r, v, args, false, true); }

Value reverse(Renderer&, const Value& v, CallArgs& args) {
  BoundArgs("reverse", args, {});
  if (v.is_string()) {
    std::u32string cps = utf8::decode(v.text);
    std::reverse(cps.begin(), cps.end());
    return Value::string(utf8::encode(cps), v.markup);
  }
  const bool generator = v.is_list() && v.seq_kind() == SeqKind::Iterator;
  if (!v.is_list() && !v.is_dict() && !v.is_undefined()) fail("argument must be iterable");
  std::vector<Value> items = iterate(v);
  std::reverse(items.begin(), items.end());
  return generator ? Value::sequence(std::move(items)) : iterator(std::move(items));  // reversed() vs list.reverse()
}

Value slice(Renderer& renderer, const Value& v, CallArgs& args) {
  const BoundArgs a("slice", args, {"slices", "fill_with"});
  const std::int64_t slices = to_index(a.get(0), "slices");
  const std::vector<Value> seq = iterate(v);
  if (slices <= 0) fail(slices == 0 ? "integer division or modulo by zero" : "slice count must be positive");
  renderer.count_steps(static_cast<long>(std::min<std::int64_t>(slices, INT32_MAX)));
  const auto length = static_cast<std::int64_t>(seq.size());
  const std::int64_t per_slice = length / slices, with_extra = length % slices;
  std::vector<Value> out;
  std::int64_t offset = 0;
  for (std::int64_t n = 0; n < slices; ++n) {
    const std::int64_t start = offset + n * per_slice;
    if (n < with_extra) ++offset;
    const std::int64_t end = offset + (n + 1) * per_slice;
    std::vector<Value> part(seq.begin() + start, seq.begin() + end);
    if (a.given(1) && !a.get(1).is_none() && n >= with_extra) part.push_back(a.get(1));
    out.push_back(Value::sequence(std::move(part)));
  }
  return iterator(std::move(out));
}

Value sort(Renderer& renderer, const Value& v, CallArgs& args) {
  const BoundArgs a("sort", args, {"reverse", "case_sensitive", "attribute"});
  std::vector<Value> items = iterate(v);
  std::vector<Value> keys;
  keys.reserve(items.size());
  for (const Value& item : items)
    keys.push_back(multi_attribute_key(renderer, item, a.get_or(2, Value::none()), truthy(a.get(1))));
  return Value::sequence(sorted_by(std::move(items), keys, truthy(a.get(0))));
}

Value sum(Renderer& renderer, const Value& v, CallArgs& args) {
  const BoundArgs a("sum", args, {"attribute", "start"});
  Value total = a.get_or(1, Value::of_int(0));
  if (total.is_string()) fail("sum() can't sum strings [use ''.join(seq) instead]");
  for (const Value& item : iterate(v))
    total =
        binary_op(renderer, ast::BinaryOp::Add, total, get_attribute_path(renderer, item, a.get_or(0, Value::none())));
  return total;
}

Value unique(Renderer& renderer, const Value& v, CallArgs& args) {
  const BoundArgs a("unique", args, {"case_sensitive", "attribute"});
  std::vector<Value> seen, out;
  for (const Value& item : iterate(v)) {
    Value key = get_attribute_path(renderer, item, a.get_or(1, Value::none()));
    if (!truthy(a.get(0))) key = lower_if_string(key);
    if (!is_hashable(key)) fail("unhashable type: '" + type_name(key) + "'");
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return iterator(std::move(out));
}

}  // namespace parley::jinja::filters
