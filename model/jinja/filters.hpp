// Jinja2's filters, split between text and number filters (filters.cpp, which holds the table) and sequence
// filters (filters_sequence.cpp). Each takes the piped value and the call's arguments, as Jinja2's do.
#pragma once
#include <string_view>

#include "model/jinja/builtins.hpp"
#include "model/jinja/render.hpp"

namespace parley::jinja::filters {

// Jinja2's make_attrgetter: "a.b.0" looked up part by part with the sandbox's getitem, digits as indices.
Value get_attribute_path(Renderer& renderer, const Value& item, const Value& path);
Value lower_if_string(const Value& v);  // the case-insensitive sort key

Value batch(Renderer&, const Value&, CallArgs&);
Value dictsort(Renderer&, const Value&, CallArgs&);
Value first(Renderer&, const Value&, CallArgs&);
Value join(Renderer&, const Value&, CallArgs&);
Value items(Renderer&, const Value&, CallArgs&);
Value last(Renderer&, const Value&, CallArgs&);
Value list(Renderer&, const Value&, CallArgs&);
Value map(Renderer&, const Value&, CallArgs&);
Value max(Renderer&, const Value&, CallArgs&);
Value min(Renderer&, const Value&, CallArgs&);
Value reject(Renderer&, const Value&, CallArgs&);
Value rejectattr(Renderer&, const Value&, CallArgs&);
Value reverse(Renderer&, const Value&, CallArgs&);
Value select(Renderer&, const Value&, CallArgs&);
Value selectattr(Renderer&, const Value&, CallArgs&);
Value slice(Renderer&, const Value&, CallArgs&);
Value sort(Renderer&, const Value&, CallArgs&);
Value sum(Renderer&, const Value&, CallArgs&);
Value unique(Renderer&, const Value&, CallArgs&);

}  // namespace parley::jinja::filters
