// The Prometheus text exposition format 0.0.4:
// https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format
#include "http/prometheus.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace parley::prom {

namespace {

bool valid_name(const std::string& name, bool allow_colon) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// HELP text escapes backslash and newline; label values also escape the double quote.
std::string escape(const std::string& s, bool quote) {
  std::string out;
  for (const char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && quote)
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (value == std::floor(value) && std::fabs(value) < 1e16) {
    std::snprintf(buf, sizeof buf, "%.1f", value);  // integral: "3.0", as Python's repr
    return buf;
  }
  const auto r = std::to_chars(buf, buf + sizeof buf, value);  // shortest text that reads back exactly
  return std::string(buf, r.ptr);
}

void Counter::inc(double amount) {
  if (!(amount >= 0.0)) throw std::invalid_argument("Counters can only be incremented by non-negative amounts.");
  value_ += amount;
}

void Counter::set(double total) { value_ = total; }

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)) {
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    if (!std::isfinite(bounds_[i])) throw std::invalid_argument("histogram bounds must be finite (+Inf is implied)");
    if (i > 0 && !(bounds_[i - 1] < bounds_[i])) throw std::invalid_argument("histogram bounds must be increasing");
  }
  counts_.assign(bounds_.size() + 1, 0);
}

void Histogram::observe(double value) {
  std::size_t i = 0;
  while (i < bounds_.size() && !(value <= bounds_[i])) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

FamilyBase::FamilyBase(std::string name, std::string help, std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {
  if (!valid_name(name_, true)) throw std::invalid_argument("invalid metric name: '" + name_ + "'");
  for (const std::string& l : label_names_)
    if (!valid_name(l, false) || l.rfind("__", 0) == 0)
      throw std::invalid_argument("invalid label name '" + l + "' for metric " + name_);
}

void FamilyBase::check_label_values(const std::vector<std::string>& values) const {
  if (values.size() != label_names_.size())
    throw std::invalid_argument(name_ + " takes " + std::to_string(label_names_.size()) + " label values, got " +
                                std::to_string(values.size()));
}

void FamilyBase::render_header(std::string& out, const char* type) const {
  out += "# HELP " + name_ + " " + escape(help_, false) + "\n";
  out += "# TYPE " + name_ + " " + type + "\n";
}

std::string FamilyBase::series(const std::string& suffix, const std::vector<std::string>& values,
                               const std::string& extra_name, const std::string& extra_value) const {
  std::string s = name_ + suffix;
  if (label_names_.empty() && extra_name.empty()) return s;
  s += '{';
  for (std::size_t i = 0; i < label_names_.size(); ++i) {
    if (i) s += ',';
    s += label_names_[i] + "=\"" + escape(values[i], true) + '"';
  }
  if (!extra_name.empty()) {
    if (!label_names_.empty()) s += ',';
    s += extra_name + "=\"" + extra_value + '"';
  }
  return s + '}';
}

template <>
void Family<Counter>::render(std::string& out) const {
  render_header(out, "counter");
  for (const auto& [values, c] : children_) out += series("", values) + " " + format_value(c.value()) + "\n";
}

template <>
void Family<Gauge>::render(std::string& out) const {
  render_header(out, "gauge");
  for (const auto& [values, g] : children_) out += series("", values) + " " + format_value(g.value()) + "\n";
}

// Buckets are cumulative (each counts every observation <= le), then _count and _sum, per child.
template <>
void Family<Histogram>::render(std::string& out) const {
  render_header(out, "histogram");
  for (const auto& [values, h] : children_) {
    uint64_t cumulative = 0;
    for (std::size_t i = 0; i < h.bucket_counts().size(); ++i) {
      cumulative += h.bucket_counts()[i];
      const double le = i < h.upper_bounds().size() ? h.upper_bounds()[i] : INFINITY;
      out += series("_bucket", values, "le", format_value(le)) + " " + format_value(double(cumulative)) + "\n";
    }
    out += series("_count", values) + " " + format_value(double(h.count())) + "\n";
    out += series("_sum", values) + " " + format_value(h.sum()) + "\n";
  }
}

template <class Metric>
Family<Metric>& Registry::add(std::unique_ptr<Family<Metric>> family) {
  for (const auto& f : families_)
    if (f->name() == family->name()) throw std::invalid_argument("metric " + family->name() + " registered twice");
  Family<Metric>& ref = *family;
  families_.push_back(std::move(family));
  return ref;
}

Family<Counter>& Registry::counter(std::string name, std::string help, std::vector<std::string> label_names) {
  return add(std::make_unique<Family<Counter>>(std::move(name), std::move(help), std::move(label_names), Counter{}));
}

Family<Gauge>& Registry::gauge(std::string name, std::string help, std::vector<std::string> label_names) {
  return add(std::make_unique<Family<Gauge>>(std::move(name), std::move(help), std::move(label_names), Gauge{}));
}

Family<Histogram>& Registry::histogram(std::string name, std::string help, std::vector<double> upper_bounds,
                                       std::vector<std::string> label_names) {
  for (const std::string& l : label_names)
    if (l == "le") throw std::invalid_argument("histogram " + name + " cannot take the label 'le'");
  return add(std::make_unique<Family<Histogram>>(std::move(name), std::move(help), std::move(label_names),
                                                 Histogram(std::move(upper_bounds))));
}

std::string Registry::render() const {
  std::string out;
  for (const auto& f : families_) f->render(out);
  return out;
}

namespace {

// A text's families in order: each the lines from its "# HELP" up to the next family's.
std::vector<std::pair<std::string, std::vector<std::string>>> families_of(const std::string& text) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    if (line.rfind("# HELP ", 0) == 0)
      out.push_back({line, {}});
    else if (out.empty())
      throw std::invalid_argument("merge_engine_metrics: a sample before any # HELP line");
    else
      out.back().second.push_back(line);
  }
  return out;
}

std::string with_engine_label(const std::string& sample, size_t engine) {
  const std::string label = "engine=\"" + std::to_string(engine) + "\"";
  const size_t brace = sample.find('{'), space = sample.find(' ');
  if (brace != std::string::npos && brace < space)
    return sample.substr(0, brace + 1) + label + (sample[brace + 1] == '}' ? "" : ",") + sample.substr(brace + 1);
  return sample.substr(0, space) + "{" + label + "}" + sample.substr(space);
}

}  // namespace

std::string merge_engine_metrics(const std::vector<std::string>& texts) {
  std::vector<std::vector<std::pair<std::string, std::vector<std::string>>>> engines;
  for (const std::string& t : texts) engines.push_back(families_of(t));
  std::string out;
  for (size_t f = 0; !engines.empty() && f < engines[0].size(); ++f) {
    out += engines[0][f].first + "\n";
    for (const std::string& line : engines[0][f].second)
      if (line.rfind("# ", 0) == 0) out += line + "\n";  // TYPE
    for (size_t e = 0; e < engines.size(); ++e) {
      if (engines[e].size() != engines[0].size() || engines[e][f].first != engines[0][f].first)
        throw std::invalid_argument("merge_engine_metrics: engine " + std::to_string(e) + " has other metric families");
      for (const std::string& line : engines[e][f].second)
        if (line.rfind("# ", 0) != 0) out += with_engine_label(line, e) + "\n";
    }
  }
  return out;
}

}  // namespace parley::prom
