// Exact grammars for ranges of decimal integers, digit by digit, and the integer and number schemas
// built on them.
#include <cmath>
#include <string>
#include <vector>

#include "engine/structured_output/gbnf_text.hpp"
#include "engine/structured_output/json_schema_internal.hpp"

namespace parley::structured::json_schema {
namespace {

constexpr int kOpenRangeDigits = 16;  // as the `integer` helper: a model must not ramble in digits
constexpr double kLargestBound = 1e18;

std::string alternatives(const std::vector<std::string>& options) {
  if (options.size() == 1) return options[0];
  std::string out;
  for (const auto& o : options) out += (out.empty() ? "(" : " | ") + o;
  return out + ")";
}

std::string digit_class(char lo, char hi) {
  if (lo == hi) return gbnf_literal(std::string(1, lo));
  return std::string("[") + lo + "-" + hi + "]";
}

std::string any_digits(size_t count) {
  if (count == 0) return "";
  return count == 1 ? "[0-9]" : "[0-9]{" + std::to_string(count) + "}";
}

std::string join_seq(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + " " + b;
}

bool all_of(std::string_view s, char c) { return s.find_first_not_of(c) == std::string_view::npos; }

// Every digit string of a's length from a to b (same length, a <= b), leading zeros as given.
std::string same_length_range(const std::string& a, const std::string& b) {
  size_t common = 0;
  while (common < a.size() && a[common] == b[common]) ++common;
  const std::string prefix = common ? gbnf_literal(a.substr(0, common)) : "";
  if (common == a.size()) return prefix;
  const std::string a_rest = a.substr(common + 1), b_rest = b.substr(common + 1);
  char low_digit = a[common], high_digit = b[common];
  std::vector<std::string> options;
  // The first differing digit splits the range into a's tail, whole middle digits, and b's tail.
  if (!all_of(a_rest, '0')) {
    options.push_back(
        join_seq(gbnf_literal(std::string(1, low_digit)), same_length_range(a_rest, std::string(a_rest.size(), '9'))));
    ++low_digit;
  }
  std::string high_option;
  if (!all_of(b_rest, '9')) {
    high_option =
        join_seq(gbnf_literal(std::string(1, high_digit)), same_length_range(std::string(b_rest.size(), '0'), b_rest));
    --high_digit;
  }
  if (low_digit <= high_digit)
    options.push_back(join_seq(digit_class(low_digit, high_digit), any_digits(a_rest.size())));
  if (!high_option.empty()) options.push_back(high_option);
  return join_seq(prefix, alternatives(options));
}

uint64_t power_of_ten(size_t exponent) {
  uint64_t p = 1;
  for (size_t i = 0; i < exponent; ++i) p *= 10;
  return p;
}

// Natural numbers in [lo, hi] without leading zeros; no hi: up to max(16, lo's length) digits.
std::vector<std::string> natural_range(uint64_t lo, std::optional<uint64_t> hi) {
  std::vector<std::string> options;
  const size_t lo_digits = std::to_string(lo).size();
  const size_t hi_digits = hi ? std::to_string(*hi).size() : std::max<size_t>(kOpenRangeDigits, lo_digits);
  for (size_t digits = lo_digits; digits <= hi_digits; ++digits) {
    const uint64_t first = std::max(lo, digits == 1 ? 0 : power_of_ten(digits - 1));
    if (!hi && digits > lo_digits) {  // every longer length at once
      options.push_back("[1-9] [0-9]{" + std::to_string(digits - 1) + "," + std::to_string(hi_digits - 1) + "}");
      break;
    }
    const uint64_t last = hi && digits == hi_digits ? *hi : power_of_ten(digits) - 1;
    if (first <= last) options.push_back(same_length_range(std::to_string(first), std::to_string(last)));
  }
  return options;
}

std::optional<double> bound(const Json& schema, const char* keyword, const std::string& pointer) {
  if (!schema.contains(keyword)) return std::nullopt;
  const Json& value = schema.at(keyword);
  if (value.is_boolean()) invalid(keyword, pointer, "must be a number (draft-4 boolean bounds are not supported)");
  if (!value.is_number()) invalid(keyword, pointer, "must be a number");
  return value.get<double>();
}

// The schema's bounds as an inclusive integer interval; bounds past 1e18 (beyond the digits a grammar
// writes) count as open when they are loose and are refused when they are tight.
struct IntegerInterval {
  std::optional<int64_t> min, max;
};

IntegerInterval integer_interval(const Json& schema, const std::string& pointer) {
  IntegerInterval out;
  auto lower = [&](const char* keyword, double v, bool exclusive) {
    if (v < -kLargestBound) return;
    if (v > kLargestBound) invalid(keyword, pointer, "is beyond the supported range of +-1e18");
    const auto i = int64_t(exclusive ? std::floor(v) + 1 : std::ceil(v));
    out.min = out.min ? std::max(*out.min, i) : i;
  };
  auto upper = [&](const char* keyword, double v, bool exclusive) {
    if (v > kLargestBound) return;
    if (v < -kLargestBound) invalid(keyword, pointer, "is beyond the supported range of +-1e18");
    const auto i = int64_t(exclusive ? std::ceil(v) - 1 : std::floor(v));
    out.max = out.max ? std::min(*out.max, i) : i;
  };
  if (auto v = bound(schema, "minimum", pointer)) lower("minimum", *v, false);
  if (auto v = bound(schema, "exclusiveMinimum", pointer)) lower("exclusiveMinimum", *v, true);
  if (auto v = bound(schema, "maximum", pointer)) upper("maximum", *v, false);
  if (auto v = bound(schema, "exclusiveMaximum", pointer)) upper("exclusiveMaximum", *v, true);
  return out;
}

bool has_bounds(const Json& schema) {
  for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    if (schema.contains(k)) return true;
  }
  return false;
}

}  // namespace

std::string integer_range_expression(std::optional<int64_t> min, std::optional<int64_t> max) {
  std::vector<std::string> options;
  if (!max || *max >= 0) {
    const auto lo = uint64_t(min && *min > 0 ? *min : 0);
    for (auto& o : natural_range(lo, max ? std::optional<uint64_t>(uint64_t(*max)) : std::nullopt))
      options.push_back(o);
  }
  if (!min || *min < 0) {  // -k for k in [max(1, -max), -min]
    const auto lo = uint64_t(max && *max < 0 ? -*max : 1);
    const auto magnitudes = natural_range(lo, min ? std::optional<uint64_t>(uint64_t(-*min)) : std::nullopt);
    options.push_back("\"-\" " + alternatives(magnitudes));
  }
  if (options.empty()) return "";
  if (options.size() == 1) return options[0];
  std::string out;
  for (const auto& o : options) out += (out.empty() ? "" : " | ") + o;
  return out;
}

std::string SchemaVisitor::integer_rule(const Json& schema, const std::string& name, const std::string& pointer) {
  if (!has_bounds(schema)) return add_helper(rules_, "integer");
  const IntegerInterval range = integer_interval(schema, pointer);
  if (range.min && range.max && *range.min > *range.max) {
    unsatisfiable(pointer, "no integer lies between its minimum and maximum (" + std::to_string(*range.min) + " > " +
                               std::to_string(*range.max) + " once exclusive bounds are applied)");
  }
  return add(name, "(" + integer_range_expression(range.min, range.max) + ") " + add_helper(rules_, "space"));
}

// With integer bounds, a number is its integer part's range and whether the fraction is zero: v in
// [lo, hi] is I with a zero fraction for I in [lo, hi], or I.F with F > 0 for [I, I+1] within the
// bounds (mirrored for negatives). Exponents are left out; fractional bounds are refused.
std::string SchemaVisitor::number_rule(const Json& schema, const std::string& name, const std::string& pointer) {
  if (!has_bounds(schema)) return add_helper(rules_, "number");
  for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    auto v = bound(schema, k, pointer);
    if (v && *v != std::floor(*v)) {
      invalid(k, pointer,
              "is fractional, which a number grammar cannot express exactly (integer bounds are supported)");
    }
  }
  // Open ends are +-kOpen, past every bound (1e18), so negating and adding 1 stay exact.
  constexpr int64_t kOpen = 4'000'000'000'000'000'000;
  auto clamp = [&](double v) { return std::fabs(v) > kLargestBound ? (v < 0 ? -kOpen : kOpen) : int64_t(v); };
  const IntegerInterval points = integer_interval(schema, pointer);
  const int64_t point_lo = points.min.value_or(-kOpen), point_hi = points.max.value_or(kOpen);
  // (I, I+1) fits when I >= the lower bound and I + 1 <= the upper bound, exclusive or not.
  int64_t open_lo = -kOpen, open_hi = kOpen;
  for (const char* k : {"minimum", "exclusiveMinimum"}) {
    if (auto v = bound(schema, k, pointer)) open_lo = std::max(open_lo, clamp(*v));
  }
  for (const char* k : {"maximum", "exclusiveMaximum"}) {
    if (auto v = bound(schema, k, pointer)) open_hi = std::min(open_hi, clamp(*v) == kOpen ? kOpen : clamp(*v) - 1);
  }
  const std::string zero_fraction = "(\".\" \"0\"{1,16})?";
  const std::string nonzero_fraction = "\".\" \"0\"{0,15} [1-9] [0-9]{0,15}";
  std::vector<std::string> options;
  // Integer parts I in [lo, hi] (I >= floor) written after an optional minus and before `tail`.
  auto add_side = [&](int64_t lo, int64_t hi, int64_t floor, bool negative, const std::string& tail) {
    const int64_t from = std::max(lo, floor);
    if (hi < from) return;
    const auto magnitudes = natural_range(uint64_t(from), hi >= kOpen ? std::nullopt : std::optional<uint64_t>(hi));
    options.push_back((negative ? "\"-\" " : "") + alternatives(magnitudes) + " " + tail);
  };
  add_side(point_lo, point_hi, 0, false, zero_fraction);
  add_side(open_lo, open_hi, 0, false, nonzero_fraction);
  add_side(-point_hi, -point_lo, 1, true, zero_fraction);  // -I with I >= 1: no "-0"
  // -I.F lies in (-(I+1), -I): it fits when -(I+1) >= the lower bound and -I <= the upper bound.
  add_side(open_hi == kOpen ? -kOpen : -(open_hi + 1), open_lo == -kOpen ? kOpen : -(open_lo + 1), 0, true,
           nonzero_fraction);
  if (options.empty()) unsatisfiable(pointer, "no number lies between its bounds");
  std::string body;
  for (const auto& o : options) body += (body.empty() ? "(" : " | ") + o;
  return add(name, body + ") " + add_helper(rules_, "space"));
}

}  // namespace parley::structured::json_schema
