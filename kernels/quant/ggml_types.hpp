// ggml's tensor types as GGUF stores them: ids, names, block sizes, and the checks a loader makes on a tensor.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace parley::quant {

// The ggml type ids Parley encodes and decodes (GGML_TYPE_* in ggml.h); the same numbers as parley::GgmlType.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ4_XS = 23,
  BF16 = 30,
  MXFP4 = 39,
};

inline constexpr int64_t kSuperBlock = 256;  // QK_K: the K-quants' super-block

struct TypeTraits {
  GgmlType type;
  const char* name;    // ggml's type_name: "q4_K", "bf16"
  int64_t block_size;  // elements per block
  size_t block_bytes;  // bytes per block
  bool is_weight;      // false for q8_1 and q8_K: activations for dot products, never stored in a model
};

// Every type above, in id order.
std::span<const TypeTraits> all_types();
const TypeTraits& traits(GgmlType type);
// nullptr for an id Parley does not encode (q2_K, iq*, tq*, ...).
const TypeTraits* find_traits(uint32_t type_id);
// ggml's name for any id it knows ("iq2_xxs", "q3_K"), or "unknown ggml type <id>".
std::string ggml_type_name(uint32_t type_id);

// Bytes of n elements; n must be a whole number of blocks (throws std::invalid_argument otherwise).
size_t row_bytes(GgmlType type, int64_t n);

// The type of a tensor in a model file; throws std::runtime_error naming the type and the tensor when Parley
// cannot decode it, or when it is an activation type no model stores.
GgmlType checked_weight_type(uint32_t type_id, std::string_view tensor_name);

// The bytes a tensor of shape ne (ne[0] the row length) occupies. Throws std::runtime_error naming the tensor
// when the row length is not a whole number of blocks, or when the file holds fewer than that many bytes.
uint64_t checked_tensor_bytes(GgmlType type, std::span<const uint64_t> ne, uint64_t available_bytes,
                              std::string_view tensor_name);

}  // namespace parley::quant
