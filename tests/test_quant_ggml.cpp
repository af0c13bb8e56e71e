// model/quant against ggml itself: node-llama-cpp's prebuilt libggml-base.so (tests/e2e/install.sh fetches it),
// loaded with dlopen. Every type's encoder must write ggml's bytes and every decoder return ggml's float bits.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/quant/ggml_types.hpp"
#include "kernels/quant/half.hpp"
#include "kernels/quant/quantize.hpp"

using namespace parley::quant;

namespace {

// struct ggml_type_traits as ggml/include/ggml.h of the bundled llama.cpp declares it.
struct GgmlTypeTraitsAbi {
  const char* type_name;
  int64_t blck_size;
  int64_t blck_size_interleave;
  size_t type_size;
  bool is_quantized;
  void (*to_float)(const void* x, float* y, int64_t k);
  void (*from_float_ref)(const float* x, void* y, int64_t k);
};

using RowEncoder = void (*)(const float*, void*, int64_t);
using RowDecoder = void (*)(const void*, float*, int64_t);

struct Ggml {
  const GgmlTypeTraitsAbi* (*get_type_traits)(int type);
  size_t (*row_size)(int type, int64_t ne);
  size_t (*quantize_chunk)(int type, const float* src, void* dst, int64_t start, int64_t nrows, int64_t n_per_row,
                           const float* imatrix);
  RowEncoder quantize_row_q8_1_ref, quantize_row_q8_K_ref;  // activations: ggml_quantize_chunk has no case
  RowDecoder dequantize_row_q8_K;
  std::string error;  // why it did not load
};

template <typename Fn>
void resolve(void* lib, const char* name, Fn& fn, std::string& error) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn && error.empty()) error = std::string("symbol ") + name + " missing from " + PARLEY_GGML_BASE_LIB;
}

// Loaded once; a missing library fails every case that needs it, with the command that installs it.
const Ggml& ggml() {
  static const Ggml loaded = [] {
    Ggml g{};
    void* lib = dlopen(PARLEY_GGML_BASE_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      g.error = std::string("cannot load ") + PARLEY_GGML_BASE_LIB + " (" + dlerror() +
                "): run tests/e2e/install.sh to fetch node-llama-cpp's prebuilt ggml";
      return g;
    }
    resolve(lib, "ggml_get_type_traits", g.get_type_traits, g.error);
    resolve(lib, "ggml_row_size", g.row_size, g.error);
    resolve(lib, "ggml_quantize_chunk", g.quantize_chunk, g.error);
    resolve(lib, "quantize_row_q8_1_ref", g.quantize_row_q8_1_ref, g.error);
    resolve(lib, "quantize_row_q8_K_ref", g.quantize_row_q8_K_ref, g.error);
    resolve(lib, "dequantize_row_q8_K", g.dequantize_row_q8_K, g.error);
    return g;
  }();
  if (!loaded.error.empty()) FAIL(loaded.error);
  return loaded;
}

int id(GgmlType type) { return static_cast<int>(type); }

// ggml's encoder of a whole tensor: ggml_quantize_chunk, or the row function of an activation type.
void ggml_quantize(GgmlType type, const float* src, void* dst, int64_t start, int64_t nrows, int64_t n_per_row) {
  const Ggml& g = ggml();
  const size_t skip = static_cast<size_t>(start / n_per_row) * g.row_size(id(type), n_per_row);
  char* out = static_cast<char*>(dst) + skip;
  if (type == GgmlType::Q8_1) return g.quantize_row_q8_1_ref(src + start, out, nrows * n_per_row);
  if (type == GgmlType::Q8_K) return g.quantize_row_q8_K_ref(src + start, out, nrows * n_per_row);
  g.quantize_chunk(id(type), src, dst, start, nrows, n_per_row, nullptr);
}

// ggml's decoder: to_float (none for f32, which is a copy, or q8_K, whose row function is exported).
void ggml_dequantize(GgmlType type, const void* src, float* dst, int64_t n) {
  if (type == GgmlType::F32) return (void)std::memcpy(dst, src, n * sizeof(float));
  if (type == GgmlType::Q8_K) return ggml().dequantize_row_q8_K(src, dst, n);
  ggml().get_type_traits(id(type))->to_float(src, dst, n);
}

// Index of the first differing byte, or -1.
int64_t first_difference(const void* a, const void* b, size_t bytes) {
  const auto* x = static_cast<const uint8_t*>(a);
  const auto* y = static_cast<const uint8_t*>(b);
  for (size_t i = 0; i < bytes; ++i)
    if (x[i] != y[i]) return static_cast<int64_t>(i);
  return -1;
}

// Index of the first float whose bits differ, or -1; any two NaNs match. Where two NaN operands meet (q4_1's
// d * q + m with both fp16 fields NaN) IEEE leaves the payload to the order the compiler picks.
int64_t first_difference_but_nan(const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i]) && !(std::isnan(a[i]) && std::isnan(b[i])))
      return i;
  return -1;
}

// The value patterns: each fills one row of n floats.
struct Pattern {
  const char* name;
  std::function<float(std::mt19937&, int64_t j)> value;
};

std::vector<Pattern> patterns() {
  auto normal = [](float sd) {
    return [sd](std::mt19937& rng, int64_t) { return std::normal_distribution<float>(0, sd)(rng); };
  };
  return {
      {"normal", normal(1.0f)},
      {"tiny", normal(1e-20f)},
      {"large", normal(3e4f)},  // beyond fp16's range: scales and mins overflow to infinity, as in ggml
      {"mixed magnitudes",
       [](std::mt19937& rng, int64_t) {
         const float scale = std::pow(10.0f, std::uniform_int_distribution<int>(-6, 4)(rng));
         return std::normal_distribution<float>(0, scale)(rng);
       }},
      {"mostly zeros",
       [](std::mt19937& rng, int64_t) {
         const bool nonzero = std::uniform_int_distribution<int>(0, 9)(rng) == 0;
         return nonzero ? std::normal_distribution<float>(0, 2)(rng) : 0.0f;
       }},
      {"all zero", [](std::mt19937&, int64_t) { return 0.0f; }},
      {"all equal", [](std::mt19937&, int64_t) { return 0.37f; }},
      {"all equal negative", [](std::mt19937&, int64_t) { return -2.5f; }},
      {"negative only",
       [](std::mt19937& rng, int64_t) { return -std::fabs(std::normal_distribution<float>(0, 1)(rng)) - 0.1f; }},
      {"positive only",
       [](std::mt19937& rng, int64_t) { return std::uniform_real_distribution<float>(3.0f, 3.5f)(rng); }},
      {"outliers",
       [](std::mt19937& rng, int64_t) {
         const float x = std::normal_distribution<float>(0, 0.02f)(rng);
         return std::uniform_int_distribution<int>(0, 63)(rng) == 0 ? x * 500.0f : x;
       }},
      // Halves of integers with 127 (or -127) in every block: q8 scales of exactly 1 and rounding ties.
      {"half integers",
       [](std::mt19937& rng, int64_t j) {
         if (j % 32 == 5) return j % 64 == 5 ? 127.0f : -127.0f;
         return static_cast<float>(std::uniform_int_distribution<int>(-254, 254)(rng)) / 2.0f;
       }},
  };
}

struct Shape {
  int64_t n_per_row, nrows;
};

// Rows of 32 * k with k not a power of two for the 32-blocks, of 256 * k for the K-quants.
std::vector<Shape> shapes(GgmlType type) {
  if (traits(type).block_size == 256) return {{256, 1}, {256 * 3, 2}, {256 * 11, 3}, {4096, 4}};
  return {{32, 1}, {32 * 7, 3}, {256, 2}, {32 * 37, 2}, {4096, 4}};
}

std::vector<float> tensor(const Pattern& pattern, Shape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> x(shape.n_per_row * shape.nrows);
  for (size_t i = 0; i < x.size(); ++i) x[i] = pattern.value(rng, static_cast<int64_t>(i % shape.n_per_row));
  return x;
}

}  // namespace

TEST_CASE("The type table agrees with ggml's traits and row sizes", "[quant][ggml]") {
  const Ggml& g = ggml();
  for (const TypeTraits& t : all_types()) {
    INFO(t.name);
    const GgmlTypeTraitsAbi* theirs = g.get_type_traits(id(t.type));
    CHECK(std::string(theirs->type_name) == t.name);
    CHECK(theirs->blck_size == t.block_size);
    CHECK(theirs->type_size == t.block_bytes);
    CHECK(g.row_size(id(t.type), 4096) == row_bytes(t.type, 4096));
  }
  for (uint32_t type_id = 0; type_id < 43; ++type_id) {
    const std::string theirs = g.get_type_traits(static_cast<int>(type_id))->type_name;
    if (theirs == "DEPRECATED" || theirs.find("REMOVED") != std::string::npos) continue;
    CHECK(ggml_type_name(type_id) == theirs);
  }
}

TEST_CASE("fp16 and bf16 convert as ggml does, for every half and a sweep of floats", "[quant][ggml]") {
  const GgmlTypeTraitsAbi* f16 = ggml().get_type_traits(id(GgmlType::F16));
  const GgmlTypeTraitsAbi* bf16 = ggml().get_type_traits(id(GgmlType::BF16));
  std::vector<uint16_t> halves(65536);
  for (uint32_t h = 0; h < 65536; ++h) halves[h] = static_cast<uint16_t>(h);
  std::vector<float> theirs(65536), ours(65536);
  for (auto [format, decode] : {std::pair{f16, &half_to_float}, std::pair{bf16, &bf16_to_float}}) {
    format->to_float(halves.data(), theirs.data(), 65536);
    for (uint32_t h = 0; h < 65536; ++h) ours[h] = decode(static_cast<uint16_t>(h));
    CHECK(first_difference(theirs.data(), ours.data(), 65536 * sizeof(float)) == -1);
  }
  // Every 1021st bit pattern, and every pattern within 64 of a power of two and of a rounding midpoint.
  std::vector<float> floats;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 1021)
    floats.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  for (uint32_t exponent = 0; exponent < 512; ++exponent)
    for (uint32_t mid : {0u, 0x1000u, 0x8000u})
      for (int32_t delta = -64; delta <= 64; ++delta)
        floats.push_back(std::bit_cast<float>((exponent << 23) + mid + static_cast<uint32_t>(delta)));
  std::vector<uint16_t> theirs_h(floats.size()), ours_h(floats.size());
  for (auto [format, encode] : {std::pair{f16, &float_to_half}, std::pair{bf16, &float_to_bf16}}) {
    format->from_float_ref(floats.data(), theirs_h.data(), static_cast<int64_t>(floats.size()));
    for (size_t i = 0; i < floats.size(); ++i) ours_h[i] = encode(floats[i]);
    const int64_t at = first_difference(theirs_h.data(), ours_h.data(), floats.size() * 2);
    INFO("first difference at float bits " << (at < 0 ? 0 : std::bit_cast<uint32_t>(floats[at / 2])));
    CHECK(at == -1);
  }
}

TEST_CASE("Every type encodes ggml's bytes and decodes ggml's floats, for every shape and value pattern",
          "[quant][ggml]") {
  uint32_t seed = 1;
  for (const TypeTraits& t : all_types()) {
    for (Shape shape : shapes(t.type)) {
      for (const Pattern& pattern : patterns()) {
        const std::vector<float> x = tensor(pattern, shape, seed++);
        const size_t bytes = row_bytes(t.type, shape.n_per_row) * shape.nrows;
        std::vector<uint8_t> theirs(bytes), ours(bytes);
        ggml_quantize(t.type, x.data(), theirs.data(), 0, shape.nrows, shape.n_per_row);
        CHECK(quantize_chunk(t.type, x.data(), ours.data(), 0, shape.nrows, shape.n_per_row) == bytes);
        INFO(t.name << " rows of " << shape.n_per_row << " x " << shape.nrows << ", " << pattern.name);
        CHECK(first_difference(theirs.data(), ours.data(), bytes) == -1);
        if (t.type == GgmlType::Q8_1) continue;  // ggml has no q8_1 decoder
        std::vector<float> theirs_f(x.size()), ours_f(x.size());
        ggml_dequantize(t.type, theirs.data(), theirs_f.data(), static_cast<int64_t>(x.size()));
        dequantize_row(t.type, theirs.data(), ours_f.data(), static_cast<int64_t>(x.size()));
        CHECK(first_difference(theirs_f.data(), ours_f.data(), x.size() * sizeof(float)) == -1);
      }
    }
  }
}

TEST_CASE("A chunk of rows in the middle of a tensor lands where ggml_quantize_chunk puts it", "[quant][ggml]") {
  for (const TypeTraits& t : all_types()) {
    INFO(t.name);
    const Shape shape{t.block_size == 256 ? 768 : 224, 6};
    const std::vector<float> x = tensor(patterns()[0], shape, 77);
    const size_t bytes = row_bytes(t.type, shape.n_per_row) * shape.nrows;
    std::vector<uint8_t> theirs(bytes, 0xa5), ours(bytes, 0xa5);
    ggml_quantize(t.type, x.data(), theirs.data(), 2 * shape.n_per_row, 3, shape.n_per_row);
    CHECK(quantize_chunk(t.type, x.data(), ours.data(), 2 * shape.n_per_row, 3, shape.n_per_row) ==
          3 * row_bytes(t.type, shape.n_per_row));
    CHECK(first_difference(theirs.data(), ours.data(), bytes) == -1);
  }
}

TEST_CASE("Random block bytes decode to ggml's float bits, NaN payloads aside", "[quant][ggml]") {
  std::mt19937 rng(2024);
  for (const TypeTraits& t : all_types()) {
    if (t.type == GgmlType::Q8_1) continue;
    INFO(t.name);
    const int64_t n = t.block_size == 256 ? 256 * 64 : 32 * 512;
    std::vector<uint8_t> bytes(row_bytes(t.type, n));
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    std::vector<float> theirs(n), ours(n);
    ggml_dequantize(t.type, bytes.data(), theirs.data(), n);
    dequantize_row(t.type, bytes.data(), ours.data(), n);
    CHECK(first_difference_but_nan(theirs.data(), ours.data(), n) == -1);
  }
}
