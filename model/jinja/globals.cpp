// The globals a template sees besides its context: Jinja2's range (capped as the sandbox caps it), dict and
// namespace, and transformers' raise_exception and strftime_now.
#include <ctime>

#include "model/jinja/builtins.hpp"
#include "model/jinja/objects.hpp"
#include "model/jinja/render.hpp"

namespace parley::jinja {

namespace {

constexpr std::int64_t kMaxRange = 100'000;  // jinja2.sandbox.MAX_RANGE

Value range(Renderer&, CallArgs& args) {
  if (!args.keywords.empty()) fail("range() takes no keyword arguments");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) fail("range expected 1 to 3 arguments, got " + std::to_string(p.size()));
  const std::int64_t start = p.size() == 1 ? 0 : to_index(p[0], "range");
  const std::int64_t stop = to_index(p.size() == 1 ? p[0] : p[1], "range");
  const std::int64_t step = p.size() == 3 ? to_index(p[2], "range") : 1;
  if (step == 0) fail("range() arg 3 must not be zero");
  const long double span = step > 0 ? static_cast<long double>(stop) - start : static_cast<long double>(start) - stop;
  const long double count =
      span <= 0 ? 0
                : (span + (std::abs(static_cast<long double>(step)) - 1)) / std::abs(static_cast<long double>(step));
  if (count > kMaxRange) fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  std::vector<Value> items;
  items.reserve(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(count); ++i) items.push_back(Value::of_int(start + i * step));
  return Value::sequence(std::move(items));
}

// dict(mapping or pairs, **kwargs), as namespace() and dict() take their arguments.
std::vector<std::pair<Value, Value>> dict_arguments(const CallArgs& args, std::string_view function) {
  if (args.positional.size() > 1)
    fail(std::string(function) + " expected at most 1 argument, got " + std::to_string(args.positional.size()));
  std::vector<std::pair<Value, Value>> entries;
  if (!args.positional.empty()) {
    const Value& source = args.positional[0];
    if (source.is_dict()) {
      entries = source.dict->items;
    } else {
      for (const Value& pair : iterate(source)) {
        const std::vector<Value> parts = iterate(pair);
        if (parts.size() != 2)
          fail("dictionary update sequence element has length " + std::to_string(parts.size()) + "; 2 is required");
        entries.emplace_back(parts[0], parts[1]);
      }
    }
  }
  for (const auto& [key, value] : args.keywords) entries.emplace_back(Value::string(key), value);
  return entries;
}

Value make_dict(Renderer&, CallArgs& args) {
  Value dict = Value::mapping({});
  for (auto& [key, value] : dict_arguments(args, "dict")) {
    if (!is_hashable(key)) fail("unhashable type: '" + type_name(key) + "'");
    dict.dict->set(std::move(key), std::move(value));
  }
  return dict;
}

Value make_namespace(Renderer& renderer, CallArgs& args) {
  auto ns = std::make_shared<Namespace>();
  for (auto& [key, value] : dict_arguments(args, "namespace")) {
    if (!key.is_string()) fail("namespace() keys must be strings");
    ns->set(key.text, std::move(value));
  }
  return renderer.track(ns);
}

Value raise_exception(Renderer&, CallArgs& args) {
  const BoundArgs a("raise_exception", args, {"message"});
  throw RenderError(to_str(a.get(0)), 0, true);
}

std::tm local_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}

Value strftime_now(const Options& options, CallArgs& args) {
  const BoundArgs a("strftime_now", args, {"format"});
  if (!a.get(0).is_string()) fail("strftime() argument 1 must be str, not " + type_name(a.get(0)));
  const std::tm now = options.now ? options.now() : local_now();
  const std::string format = a.get(0).text + "\x01";  // a marker: strftime's 0 then means a short buffer only
  for (std::size_t size = 64; size <= (1u << 20); size *= 4) {
    std::string out(size, '\0');
    const std::size_t n = std::strftime(out.data(), size, format.c_str(), &now);
    if (n > 0) return Value::string(out.substr(0, n - 1));
  }
  fail("strftime_now: the formatted time is too long");
}

Value not_supported(std::string_view name) {
  return Value::of_object(
      std::make_shared<Function>(std::string(name), [name = std::string(name)](Renderer&, CallArgs&) -> Value {
        fail("the global '" + name + "' is not supported");
      }));
}

}  // namespace

std::shared_ptr<Scope> make_globals(const Options& options) {
  auto globals = std::make_shared<Scope>();
  globals->set("range", Value::of_object(std::make_shared<Function>("range", range)));
  globals->set("dict", Value::of_object(std::make_shared<Function>("dict", make_dict)));
  globals->set("namespace", Value::of_object(std::make_shared<Function>("namespace", make_namespace)));
  globals->set("raise_exception", Value::of_object(std::make_shared<Function>("raise_exception", raise_exception)));
  globals->set("strftime_now",
               Value::of_object(std::make_shared<Function>(
                   "strftime_now", [&options](Renderer&, CallArgs& args) { return strftime_now(options, args); })));
  for (std::string_view name : {"lipsum", "cycler", "joiner"}) globals->set(name, not_supported(name));
  return globals;
}

}  // namespace parley::jinja
