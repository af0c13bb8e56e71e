// A small Prometheus registry: counter, gauge and histogram families with labels, rendered in the
// text exposition format 0.0.4. No HTTP and no locking: one actor owns it and serves render().
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace parley::prom {

class Counter {
 public:
  void inc(double amount = 1.0);  // throws std::invalid_argument for a negative amount
  void set(double total);         // mirrors a cumulative total kept elsewhere (e.g. the scheduler's)
  double value() const { return value_; }

 private:
  double value_ = 0.0;
};

class Gauge {
 public:
  void set(double value) { value_ = value; }
  void inc(double amount = 1.0) { value_ += amount; }
  void dec(double amount = 1.0) { value_ -= amount; }
  double value() const { return value_; }

 private:
  double value_ = 0.0;
};

class Histogram {
 public:
  // Finite, strictly increasing upper bounds; the +Inf bucket is implied. Throws std::invalid_argument.
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);  // lands in the first bucket whose bound is >= value
  const std::vector<double>& upper_bounds() const { return bounds_; }
  const std::vector<uint64_t>& bucket_counts() const { return counts_; }  // per bucket, +Inf last; not cumulative
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0.0;
  uint64_t count_ = 0;
};

class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, std::vector<std::string> label_names);
  virtual ~FamilyBase() = default;
  const std::string& name() const { return name_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  virtual void render(std::string& out) const = 0;

 protected:
  void check_label_values(const std::vector<std::string>& values) const;
  void render_header(std::string& out, const char* type) const;
  // `name{a="x",b="y"}` for one child's label values, plus an optional extra pair (a bucket's le).
  std::string series(const std::string& suffix, const std::vector<std::string>& values,
                     const std::string& extra_name = {}, const std::string& extra_value = {}) const;

  std::string name_, help_;
  std::vector<std::string> label_names_;
};

// One metric name; a child per distinct combination of label values, rendered in sorted order.
template <class Metric>
class Family : public FamilyBase {
 public:
  Family(std::string name, std::string help, std::vector<std::string> label_names, Metric prototype)
      : FamilyBase(std::move(name), std::move(help), std::move(label_names)), prototype_(std::move(prototype)) {
    if (label_names_.empty()) children_.emplace(std::vector<std::string>{}, prototype_);  // shows 0 at once
  }
  // The child for these label values (one per label name, in order), created at zero on first use.
  Metric& labels(const std::vector<std::string>& values) {
    check_label_values(values);
    return children_.try_emplace(values, prototype_).first->second;
  }
  Metric& get() { return labels({}); }  // the child of a family without labels
  void render(std::string& out) const override;

 private:
  Metric prototype_;  // a fresh child (a histogram's bounds)
  std::map<std::vector<std::string>, Metric> children_;
};

template <>
void Family<Counter>::render(std::string& out) const;
template <>
void Family<Gauge>::render(std::string& out) const;
template <>
void Family<Histogram>::render(std::string& out) const;

class Registry {
 public:
  // Throws std::invalid_argument for a bad or duplicate metric name or a bad label name.
  Family<Counter>& counter(std::string name, std::string help, std::vector<std::string> label_names = {});
  Family<Gauge>& gauge(std::string name, std::string help, std::vector<std::string> label_names = {});
  Family<Histogram>& histogram(std::string name, std::string help, std::vector<double> upper_bounds,
                               std::vector<std::string> label_names = {});
  // Every family in registration order, as served at /metrics (Content-Type: text/plain; version=0.0.4).
  std::string render() const;

 private:
  template <class Metric>
  Family<Metric>& add(std::unique_ptr<Family<Metric>> family);
  std::vector<std::unique_ptr<FamilyBase>> families_;
};

// A sample value as Prometheus' Python client writes it: "3.0", "0.25", "1e-05", "+Inf", "NaN".
std::string format_value(double value);

// Several engines' /metrics texts (data-parallel replicas, the same families in the same order) as one
// text: each family's HELP and TYPE once, then every engine's samples with an `engine="i"` label first
// (as vLLM labels its data-parallel engines). Throws std::invalid_argument when the families differ.
std::string merge_engine_metrics(const std::vector<std::string>& texts);

}  // namespace parley::prom
