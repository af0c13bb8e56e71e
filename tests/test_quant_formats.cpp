// kernels/quant without ggml: the type table, the loader's refusals, and the roundings on exact values.
// The bit-for-bit comparison with ggml itself is tests/test_quant_ggml.cpp (parley_quant_tests).
#include <catch2/catch.hpp>
#include <bit>
#include <cstring>
#include <vector>

#include "test_support.hpp"
#include "kernels/quant/ggml_types.hpp"
#include "kernels/quant/half.hpp"
#include "kernels/quant/quantize.hpp"

using namespace parley::quant;

using parley::test::error_of;

TEST_CASE("The type table has ggml's ids, block sizes and block bytes", "[quant]") {
  auto has = [](GgmlType type, uint32_t id, const char* name, int64_t block, size_t bytes) {
    const TypeTraits& t = traits(type);
    return static_cast<uint32_t>(t.type) == id && std::string(t.name) == name && t.block_size == block &&
           t.block_bytes == bytes;
  };
  CHECK(has(GgmlType::F32, 0, "f32", 1, 4));
  CHECK(has(GgmlType::F16, 1, "f16", 1, 2));
  CHECK(has(GgmlType::Q4_0, 2, "q4_0", 32, 18));
  CHECK(has(GgmlType::Q4_1, 3, "q4_1", 32, 20));
  CHECK(has(GgmlType::Q5_0, 6, "q5_0", 32, 22));
  CHECK(has(GgmlType::Q5_1, 7, "q5_1", 32, 24));
  CHECK(has(GgmlType::Q8_0, 8, "q8_0", 32, 34));
  CHECK(has(GgmlType::MXFP4, 39, "mxfp4", 32, 17));
  CHECK(has(GgmlType::Q3_K, 11, "q3_K", 256, 110));
  CHECK(has(GgmlType::IQ4_XS, 23, "iq4_xs", 256, 136));
  CHECK(has(GgmlType::Q8_1, 9, "q8_1", 32, 36));
  CHECK(has(GgmlType::Q4_K, 12, "q4_K", 256, 144));
  CHECK(has(GgmlType::Q5_K, 13, "q5_K", 256, 176));
  CHECK(has(GgmlType::Q6_K, 14, "q6_K", 256, 210));
  CHECK(has(GgmlType::Q8_K, 15, "q8_K", 256, 292));
  CHECK(has(GgmlType::BF16, 30, "bf16", 1, 2));
  CHECK(all_types().size() == 16);
  CHECK(row_bytes(GgmlType::Q4_K, 4096) == 16 * 144);
  CHECK(ggml_type_name(10) == "q2_K");
  CHECK(ggml_type_name(16) == "iq2_xxs");
  CHECK(ggml_type_name(35) == "tq2_0");
  CHECK(ggml_type_name(4) == "unknown ggml type 4");  // q4_2, removed from ggml
  CHECK(ggml_type_name(43) == "unknown ggml type 43");
}

TEST_CASE("A tensor of a type Parley cannot decode is refused by type and tensor name", "[quant]") {
  CHECK(checked_weight_type(12, "blk.0.ffn_down.weight") == GgmlType::Q4_K);
  CHECK(error_of([] { checked_weight_type(21, "blk.3.attn_v.weight"); }) ==
        "tensor 'blk.3.attn_v.weight' has ggml type iq3_s (id 21), which Parley does not load; supported: f32, f16, "
        "q4_0, q4_1, q5_0, q5_1, q8_0, q3_K, q4_K, q5_K, q6_K, iq4_xs, bf16, mxfp4");
  CHECK_THAT(error_of([] { checked_weight_type(10, "output.weight"); }),
             Catch::StartsWith("tensor 'output.weight' has ggml type q2_K (id 10)"));
  CHECK_THAT(error_of([] { checked_weight_type(19, "t"); }), Catch::Contains("iq1_s (id 19)"));
  CHECK_THAT(error_of([] { checked_weight_type(34, "t"); }), Catch::Contains("tq1_0 (id 34)"));
  CHECK_THAT(error_of([] { checked_weight_type(40, "t"); }), Catch::Contains("nvfp4 (id 40)"));
  CHECK_THAT(error_of([] { checked_weight_type(1000, "t"); }), Catch::Contains("unknown ggml type 1000 (id 1000)"));
  // The activation types of the dot products are no weight format.
  CHECK_THAT(error_of([] { checked_weight_type(15, "t"); }), Catch::Contains("q8_K (id 15)"));
  CHECK_THAT(error_of([] { checked_weight_type(9, "t"); }), Catch::Contains("q8_1 (id 9)"));
}

TEST_CASE("A row length that is not a whole number of blocks is refused, naming the tensor", "[quant]") {
  const std::vector<uint64_t> ne = {4000, 2};
  CHECK(error_of([&] { checked_tensor_bytes(GgmlType::Q4_K, ne, 1 << 20, "blk.0.attn_q.weight"); }) ==
        "tensor 'blk.0.attn_q.weight' (q4_K): row length 4000 is not a multiple of the block size 256");
  CHECK(error_of([&] { checked_tensor_bytes(GgmlType::Q8_0, std::vector<uint64_t>{48}, 1 << 20, "w"); }) ==
        "tensor 'w' (q8_0): row length 48 is not a multiple of the block size 32");
  CHECK(checked_tensor_bytes(GgmlType::Q4_0, std::vector<uint64_t>{4000, 3}, 1 << 20, "w") == 125 * 18 * 3);
  CHECK(checked_tensor_bytes(GgmlType::F16, std::vector<uint64_t>{7, 5}, 70, "w") == 70);
}

TEST_CASE("A tensor with fewer bytes in the file than its shape needs is refused as truncated", "[quant]") {
  const std::vector<uint64_t> ne = {4096, 11};
  CHECK(checked_tensor_bytes(GgmlType::Q6_K, ne, 16 * 210 * 11, "w") == 16 * 210 * 11);
  CHECK(error_of([&] { checked_tensor_bytes(GgmlType::Q6_K, ne, 16 * 210 * 11 - 1, "token_embd.weight"); }) ==
        "tensor 'token_embd.weight' (q6_K) is truncated: it needs 36960 bytes, the file holds 36959");
  const std::vector<uint64_t> huge = {uint64_t{1} << 40, uint64_t{1} << 30};
  CHECK(error_of([&] { checked_tensor_bytes(GgmlType::F32, huge, 0, "w"); }) ==
        "tensor 'w' (f32): its size overflows 64 bits");
}

TEST_CASE("Rows of partial blocks, and q8_1, which ggml cannot decode, are refused", "[quant]") {
  std::vector<float> x(300), y(300);
  std::vector<uint8_t> bytes(1024);
  CHECK(error_of([&] { quantize_row(GgmlType::Q5_K, x.data(), bytes.data(), 300); }) ==
        "q5_K needs a multiple of 256 elements, got 300");
  CHECK(error_of([&] { dequantize_row(GgmlType::Q4_1, bytes.data(), y.data(), 33); }) ==
        "q4_1 needs a multiple of 32 elements, got 33");
  CHECK(error_of([&] { dequantize_row(GgmlType::Q8_1, bytes.data(), y.data(), 32); }) ==
        "dequantize_row: ggml has no decoder for q8_1");
  CHECK(error_of([&] { quantize_chunk(GgmlType::Q8_0, x.data(), bytes.data(), 32, 1, 64); }) ==
        "quantize_chunk: start 32 is not a row start of rows of 64");
}

TEST_CASE("fp16 rounds to nearest even at the overflow, subnormal and underflow edges", "[quant]") {
  CHECK(float_to_half(65504.0f) == 0x7bff);
  CHECK(float_to_half(65519.996f) == 0x7bff);
  CHECK(float_to_half(65520.0f) == 0x7c00);         // the tie goes to the even "65536": infinity
  CHECK(float_to_half(1.0f + 0x1p-11f) == 0x3c00);  // tie to the even mantissa 0
  CHECK(float_to_half(1.0f + 3 * 0x1p-11f) == 0x3c02);
  CHECK(float_to_half(0x1p-24f) == 0x0001);
  CHECK(float_to_half(0x1p-25f) == 0x0000);  // the tie between 0 and the least subnormal
  CHECK(float_to_half(0x1.000002p-25f) == 0x0001);
  CHECK(float_to_half(-0.0f) == 0x8000);
  CHECK(float_to_half(std::bit_cast<float>(0xffc00001u)) == 0xfe00);  // every NaN is ggml's quiet 0x7e00
  CHECK(std::bit_cast<uint32_t>(half_to_float(0x0001)) == std::bit_cast<uint32_t>(0x1p-24f));
  CHECK(std::bit_cast<uint32_t>(half_to_float(0x7c01)) == 0x7fc02000u);  // a signalling NaN comes back quiet
  CHECK(float_to_bf16(1.0f + 0x1p-8f) == 0x3f80);
  CHECK(float_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);
  CHECK(float_to_bf16(std::bit_cast<float>(0x7f800001u)) == 0x7fc0);
}

TEST_CASE("nearest_int rounds ties to even, as the float adder does", "[quant]") {
  CHECK(nearest_int(2.5f) == 2);
  CHECK(nearest_int(3.5f) == 4);
  CHECK(nearest_int(-2.5f) == -2);
  CHECK(nearest_int(-0.49999997f) == 0);
  CHECK(nearest_int(4194303.0f) == 4194303);
}

TEST_CASE("q8_0 of a block whose extreme is 127 stores the rounded values and a scale of 1", "[quant]") {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j) - 15.5f;  // ties round away from zero
  x[31] = 127.0f;
  uint8_t block[34];
  quantize_row(GgmlType::Q8_0, x.data(), block, 32);
  CHECK((block[0] | block[1] << 8) == 0x3c00);  // fp16 1.0
  CHECK(static_cast<int8_t>(block[2]) == -16);
  CHECK(static_cast<int8_t>(block[2 + 15]) == -1);
  CHECK(static_cast<int8_t>(block[2 + 16]) == 1);
  CHECK(static_cast<int8_t>(block[2 + 31]) == 127);
  std::vector<float> y(32);
  dequantize_row(GgmlType::Q8_0, block, y.data(), 32);
  CHECK(y[0] == -16.0f);
  CHECK(y[31] == 127.0f);
}
