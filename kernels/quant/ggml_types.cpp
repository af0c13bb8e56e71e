#include "kernels/quant/ggml_types.hpp"

#include <array>
#include <limits>
#include <stdexcept>

#include "kernels/quant/blocks.hpp"

namespace parley::quant {

namespace {

constexpr std::array kTypes = {
    TypeTraits{GgmlType::F32, "f32", 1, sizeof(float), true},
    TypeTraits{GgmlType::F16, "f16", 1, sizeof(uint16_t), true},
    TypeTraits{GgmlType::Q4_0, "q4_0", BlockQ4_0::kElements, sizeof(BlockQ4_0), true},
    TypeTraits{GgmlType::Q4_1, "q4_1", BlockQ4_1::kElements, sizeof(BlockQ4_1), true},
    TypeTraits{GgmlType::Q5_0, "q5_0", BlockQ5_0::kElements, sizeof(BlockQ5_0), true},
    TypeTraits{GgmlType::Q5_1, "q5_1", BlockQ5_1::kElements, sizeof(BlockQ5_1), true},
    TypeTraits{GgmlType::Q8_0, "q8_0", BlockQ8_0::kElements, sizeof(BlockQ8_0), true},
    TypeTraits{GgmlType::Q8_1, "q8_1", BlockQ8_1::kElements, sizeof(BlockQ8_1), false},
    TypeTraits{GgmlType::Q3_K, "q3_K", BlockQ3_K::kElements, sizeof(BlockQ3_K), true},
    TypeTraits{GgmlType::Q4_K, "q4_K", BlockQ4_K::kElements, sizeof(BlockQ4_K), true},
    TypeTraits{GgmlType::Q5_K, "q5_K", BlockQ5_K::kElements, sizeof(BlockQ5_K), true},
    TypeTraits{GgmlType::Q6_K, "q6_K", BlockQ6_K::kElements, sizeof(BlockQ6_K), true},
    TypeTraits{GgmlType::Q8_K, "q8_K", BlockQ8_K::kElements, sizeof(BlockQ8_K), false},
    TypeTraits{GgmlType::IQ4_XS, "iq4_xs", BlockIq4Xs::kElements, sizeof(BlockIq4Xs), true},
    TypeTraits{GgmlType::BF16, "bf16", 1, sizeof(uint16_t), true},
    TypeTraits{GgmlType::MXFP4, "mxfp4", BlockMxfp4::kElements, sizeof(BlockMxfp4), true},
};

// ggml's type_name for every id of GGML_TYPE_COUNT (43); "" where ggml removed the type.
constexpr std::array<std::string_view, 43> kGgmlNames = {
    "f32",   "f16",    "q4_0",  "q4_1", "",     "",        "q5_0",   "q5_1",    "q8_0",  "q8_1",   "q2_K",
    "q3_K",  "q4_K",   "q5_K",  "q6_K", "q8_K", "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s", "iq4_nl", "iq3_s",
    "iq2_s", "iq4_xs", "i8",    "i16",  "i32",  "i64",     "f64",    "iq1_m",   "bf16",  "",       "",
    "",      "tq1_0",  "tq2_0", "",     "",     "",        "mxfp4",  "nvfp4",   "q1_0",  "q2_0",
};

std::string weight_type_list() {
  std::string list;
  for (const TypeTraits& t : kTypes)
    if (t.is_weight) list += (list.empty() ? "" : ", ") + std::string(t.name);
  return list;
}

std::string tensor_label(std::string_view tensor_name, GgmlType type) {
  return "tensor '" + std::string(tensor_name) + "' (" + traits(type).name + ")";
}

}  // namespace

std::span<const TypeTraits> all_types() { return kTypes; }

const TypeTraits* find_traits(uint32_t type_id) {
  for (const TypeTraits& t : kTypes)
    if (static_cast<uint32_t>(t.type) == type_id) return &t;
  return nullptr;
}

const TypeTraits& traits(GgmlType type) {
  const TypeTraits* t = find_traits(static_cast<uint32_t>(type));
  if (!t) throw std::invalid_argument("unsupported ggml type id " + std::to_string(static_cast<uint32_t>(type)));
  return *t;
}

std::string ggml_type_name(uint32_t type_id) {
  if (type_id < kGgmlNames.size() && !kGgmlNames[type_id].empty()) return std::string(kGgmlNames[type_id]);
  return "unknown ggml type " + std::to_string(type_id);
}

size_t row_bytes(GgmlType type, int64_t n) {
  const TypeTraits& t = traits(type);
  if (n < 0 || n % t.block_size != 0)
    throw std::invalid_argument(std::string(t.name) + " needs a multiple of " + std::to_string(t.block_size) +
                                " elements, got " + std::to_string(n));
  return static_cast<size_t>(n / t.block_size) * t.block_bytes;
}

GgmlType checked_weight_type(uint32_t type_id, std::string_view tensor_name) {
  const TypeTraits* t = find_traits(type_id);
  if (!t || !t->is_weight)
    throw std::runtime_error("tensor '" + std::string(tensor_name) + "' has ggml type " + ggml_type_name(type_id) +
                             " (id " + std::to_string(type_id) +
                             "), which Parley does not load; supported: " + weight_type_list());
  return t->type;
}

uint64_t checked_tensor_bytes(GgmlType type, std::span<const uint64_t> ne, uint64_t available_bytes,
                              std::string_view tensor_name) {
  const TypeTraits& t = traits(type);
  const uint64_t row_length = ne.empty() ? 1 : ne[0];
  if (row_length % t.block_size != 0)
    throw std::runtime_error(tensor_label(tensor_name, type) + ": row length " + std::to_string(row_length) +
                             " is not a multiple of the block size " + std::to_string(t.block_size));
  // Each factor is checked, so a shape whose size overflows 64 bits is refused rather than wrapped.
  uint64_t bytes = t.block_bytes;
  auto multiply = [&](uint64_t factor) {
    if (factor != 0 && bytes > std::numeric_limits<uint64_t>::max() / factor)
      throw std::runtime_error(tensor_label(tensor_name, type) + ": its size overflows 64 bits");
    bytes *= factor;
  };
  multiply(row_length / t.block_size);
  for (size_t i = 1; i < ne.size(); ++i) multiply(ne[i]);
  if (bytes > available_bytes)
    throw std::runtime_error(tensor_label(tensor_name, type) + " is truncated: it needs " + std::to_string(bytes) +
                             " bytes, the file holds " + std::to_string(available_bytes));
  return bytes;
}

}  // namespace parley::quant
