// pack_quant_matrix: GGUF rows of ggml blocks to the panel layout of quant_matrix.hpp.
// Each column's block is decoded to unsigned quants (q8_0: int8 bits) and its scales, then 8 columns are
// interleaved: 4-bit quants two groups to a byte, fifth bits eight to a byte, q6_K's two high bits four to a
// byte. Sizes stay the file's, but for the K-quants' 6-bit scales and mins kept as whole bytes (+2.3-2.8%).
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kernels/cpu/isa.hpp"
#include "kernels/cpu/quant_matrix.hpp"
#include "kernels/quant/blocks.hpp"

namespace parley::cpu {

namespace {

using quant::GgmlType;

struct TypeInfo {
  GgmlType type;
  int bits;  // stored bits per quant; 16 for f16 and bf16
  PanelLayout layout;
};

constexpr TypeInfo kTypes[] = {
    {GgmlType::Q4_0, 4, {32, 128, 16}},     {GgmlType::Q4_1, 4, {32, 128, 32}},
    {GgmlType::Q5_0, 5, {32, 160, 16}},     {GgmlType::Q5_1, 5, {32, 160, 32}},
    {GgmlType::Q8_0, 8, {32, 256, 16}},     {GgmlType::Q4_K, 4, {256, 1024, 160}},
    {GgmlType::Q5_K, 5, {256, 1280, 160}},  {GgmlType::Q6_K, 6, {256, 1536, 144}},
    {GgmlType::F16, 16, {1, 16, 0}},        {GgmlType::BF16, 16, {1, 16, 0}},
    {GgmlType::MXFP4, 4, {32, 128, 8}},     {GgmlType::Q3_K, 3, {256, 768, 144}},
    {GgmlType::IQ4_XS, 4, {256, 1024, 80}},
};

const TypeInfo* find_info(GgmlType type) {
  for (const TypeInfo& info : kTypes)
    if (info.type == type) return &info;
  return nullptr;
}

std::string supported_list() {
  std::string list;
  for (const TypeInfo& info : kTypes) list += (list.empty() ? "" : ", ") + quant::ggml_type_name(uint32_t(info.type));
  return list;
}

const TypeInfo& checked_info(GgmlType type) {
  const TypeInfo* info = find_info(type);
  if (!info)
    throw std::invalid_argument("quantized matmul: no kernel for ggml type " +
                                quant::ggml_type_name(static_cast<uint32_t>(type)) +
                                " (supported: " + supported_list() + ")");
  return *info;
}

template <typename Block>
Block read_block(const uint8_t* p) {
  Block b;
  std::memcpy(&b, p, sizeof(b));
  return b;
}

// One column's block as the panel stores it.
struct Decoded {
  uint8_t q[256];         // unsigned quants in element order (q8_0: the int8 bits)
  uint16_t d = 0, m = 0;  // fp16 bits: the scale, and the offset (q4_1, q5_1) or dmin (q4_K, q5_K)
  uint8_t sc[16], mn[8];  // K-quant sub-block scales (q6_K: int8 bits) and mins
};

// Element j in the low nibble of byte j, element j + half in its high nibble.
void split_nibbles(const uint8_t* qs, uint8_t* q, int half) {
  for (int j = 0; j < half; ++j) q[j] = qs[j] & 15, q[j + half] = qs[j] >> 4;
}

// ggml's get_scale_min_k4: 6-bit scale and min of sub-block j, packed in 12 bytes.
void scale_min_k4(const uint8_t* s, int j, uint8_t& scale, uint8_t& min) {
  if (j < 4) {
    scale = s[j] & 63, min = s[j + 4] & 63;
  } else {
    scale = static_cast<uint8_t>((s[j + 4] & 15) | ((s[j - 4] >> 6) << 4));
    min = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

template <typename Block>
void decode_k4(const Block& b, Decoded& out) {
  out.d = b.d, out.m = b.dmin;
  for (int s = 0; s < 4; ++s) split_nibbles(b.qs + 32 * s, out.q + 64 * s, 32);
  for (int j = 0; j < 8; ++j) scale_min_k4(b.scales, j, out.sc[j], out.mn[j]);
}

template <typename Block>
void add_fifth_bits(const Block& b, Decoded& out) {
  uint32_t qh;
  std::memcpy(&qh, b.qh, sizeof(qh));
  for (int i = 0; i < 32; ++i) out.q[i] |= static_cast<uint8_t>(((qh >> i) & 1) << 4);
}

Decoded decode(GgmlType type, const uint8_t* p) {
  Decoded out{};
  switch (type) {
    case GgmlType::Q4_0: {
      auto b = read_block<quant::BlockQ4_0>(p);
      out.d = b.d;
      split_nibbles(b.qs, out.q, 16);
      break;
    }
    case GgmlType::Q4_1: {
      auto b = read_block<quant::BlockQ4_1>(p);
      out.d = b.d, out.m = b.m;
      split_nibbles(b.qs, out.q, 16);
      break;
    }
    case GgmlType::Q5_0: {
      auto b = read_block<quant::BlockQ5_0>(p);
      out.d = b.d;
      split_nibbles(b.qs, out.q, 16);
      add_fifth_bits(b, out);
      break;
    }
    case GgmlType::Q5_1: {
      auto b = read_block<quant::BlockQ5_1>(p);
      out.d = b.d, out.m = b.m;
      split_nibbles(b.qs, out.q, 16);
      add_fifth_bits(b, out);
      break;
    }
    case GgmlType::Q8_0: {
      auto b = read_block<quant::BlockQ8_0>(p);
      out.d = b.d;
      std::memcpy(out.q, b.qs, 32);
      break;
    }
    case GgmlType::MXFP4: {  // nibbles as they are (the kernel looks their values up); e in d's low byte
      auto b = read_block<quant::BlockMxfp4>(p);
      out.d = b.e;
      split_nibbles(b.qs, out.q, 16);
      break;
    }
    case GgmlType::Q4_K:
      decode_k4(read_block<quant::BlockQ4_K>(p), out);
      break;
    case GgmlType::Q5_K: {
      auto b = read_block<quant::BlockQ5_K>(p);
      decode_k4(b, out);
      for (int s = 0; s < 4; ++s)  // qh bit 2s of byte l: element 64s + l; bit 2s + 1: element 64s + 32 + l
        for (int l = 0; l < 32; ++l) {
          out.q[64 * s + l] |= static_cast<uint8_t>(((b.qh[l] >> (2 * s)) & 1) << 4);
          out.q[64 * s + 32 + l] |= static_cast<uint8_t>(((b.qh[l] >> (2 * s + 1)) & 1) << 4);
        }
      break;
    }
    case GgmlType::Q3_K: {  // q = the two low bits + 4 * the hmask bit (0..7), sc - 32 as int8, as q6_K keeps them
      auto b = read_block<quant::BlockQ3_K>(p);
      out.d = b.d;
      for (int j = 0; j < 256; ++j)
        out.q[j] = static_cast<uint8_t>(((b.qs[32 * (j / 128) + j % 32] >> (2 * (j % 128 / 32))) & 3) |
                                        (((b.hmask[j % 32] >> (j / 32)) & 1) << 2));
      for (int s = 0; s < 16; ++s) out.sc[s] = static_cast<uint8_t>(quant::q3_K_scale(b.scales, s));
      break;
    }
    case GgmlType::IQ4_XS: {  // grid indices as nibbles (the kernel looks their values up), ls - 32 as int8
      auto b = read_block<quant::BlockIq4Xs>(p);
      out.d = b.d;
      for (int j = 0; j < 8; ++j) {
        split_nibbles(b.qs + 16 * j, out.q + 32 * j, 16);
        out.sc[j] = static_cast<uint8_t>(quant::iq4_xs_scale(b, j));
      }
      break;
    }
    case GgmlType::Q6_K: {
      auto b = read_block<quant::BlockQ6_K>(p);
      out.d = b.d;
      std::memcpy(out.sc, b.scales, 16);
      for (int h = 0; h < 2; ++h)  // each half: four runs of 32, low nibbles in ql, two high bits each in qh
        for (int l = 0; l < 32; ++l) {
          const uint8_t* ql = b.ql + 64 * h;
          const uint8_t qh = b.qh[32 * h + l];
          uint8_t* q = out.q + 128 * h;
          q[l] = static_cast<uint8_t>((ql[l] & 15) | ((qh & 3) << 4));
          q[l + 32] = static_cast<uint8_t>((ql[l + 32] & 15) | (((qh >> 2) & 3) << 4));
          q[l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh >> 4) & 3) << 4));
          q[l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh >> 6) & 3) << 4));
        }
      break;
    }
    default:
      break;
  }
  return out;
}

// Every 32 elements of the panel's 8 columns: groups g[0..3], byte 8c + e = column c, element 8g + e.
// flip: q8_0's bytes as w ^ 0x80 (QuantMatrix::biased).
void write_units(int bits, const Decoded (&cols)[8], int elements, uint8_t* dst, int unit_bytes, uint8_t flip) {
  for (int u = 0; u < elements / 32; ++u) {
    uint8_t g[4][64];
    for (int gi = 0; gi < 4; ++gi)
      for (int c = 0; c < 8; ++c)
        for (int e = 0; e < 8; ++e) g[gi][8 * c + e] = cols[c].q[32 * u + 8 * gi + e];
    uint8_t* out = dst + u * unit_bytes;
    if (bits == 8) {
      for (int i = 0; i < 256; ++i) out[i] = g[i / 64][i % 64] ^ flip;
      continue;
    }
    if (bits == 3) {  // two low bits of the four groups to a byte, then the third bits as the fifth bits are laid out
      for (int i = 0; i < 64; ++i)
        out[i] =
            static_cast<uint8_t>((g[0][i] & 3) | ((g[1][i] & 3) << 2) | ((g[2][i] & 3) << 4) | ((g[3][i] & 3) << 6));
      for (int i = 0; i < 32; ++i) {
        int high = 0;
        for (int gi = 0; gi < 4; ++gi) high |= (((g[gi][i] >> 2) & 1) << gi) | (((g[gi][i + 32] >> 2) & 1) << (4 + gi));
        out[64 + i] = static_cast<uint8_t>(high);
      }
      continue;
    }
    for (int t = 0; t < 2; ++t)
      for (int i = 0; i < 64; ++i) out[64 * t + i] = static_cast<uint8_t>((g[t][i] & 15) | ((g[t + 2][i] & 15) << 4));
    if (bits == 5)  // byte i < 32: bit g = fifth bit of group g's byte i, bit 4 + g = of its byte i + 32
      for (int i = 0; i < 32; ++i) {
        int high = 0;
        for (int gi = 0; gi < 4; ++gi) high |= (((g[gi][i] >> 4) & 1) << gi) | (((g[gi][i + 32] >> 4) & 1) << (4 + gi));
        out[128 + i] = static_cast<uint8_t>(high);
      }
    if (bits == 6)
      for (int i = 0; i < 64; ++i) {
        int high = 0;
        for (int gi = 0; gi < 4; ++gi) high |= ((g[gi][i] >> 4) & 3) << (2 * gi);
        out[128 + i] = static_cast<uint8_t>(high);
      }
  }
}

// d (and m or dmin) as 8 fp16 each, then the K-quants' per-sub-block bytes as [sub-block][column].
void write_aux(GgmlType type, const Decoded (&cols)[8], uint8_t* aux) {
  if (type == GgmlType::MXFP4) {  // one E8M0 byte per column
    for (int c = 0; c < 8; ++c) aux[c] = static_cast<uint8_t>(cols[c].d);
    return;
  }
  for (int c = 0; c < 8; ++c) {
    std::memcpy(aux + 2 * c, &cols[c].d, 2);
    if (type == GgmlType::Q6_K || type == GgmlType::Q3_K || type == GgmlType::IQ4_XS) {
      for (int j = 0; j < (type == GgmlType::IQ4_XS ? 8 : 16); ++j) aux[16 + 8 * j + c] = cols[c].sc[j];
      continue;
    }
    if (type == GgmlType::Q4_0 || type == GgmlType::Q5_0 || type == GgmlType::Q8_0) continue;
    std::memcpy(aux + 16 + 2 * c, &cols[c].m, 2);
    if (type == GgmlType::Q4_K || type == GgmlType::Q5_K)
      for (int j = 0; j < 8; ++j) aux[32 + 8 * j + c] = cols[c].sc[j], aux[96 + 8 * j + c] = cols[c].mn[j];
  }
}

// The kernels that multiply q8_0 by vpdpbusd, which takes the weights unsigned.
bool biased_for(QuantIsa isa) { return isa == QuantIsa::Avx512Vnni || isa == QuantIsa::Amx; }

}  // namespace

bool quant_matmul_supported(GgmlType type) { return find_info(type) != nullptr; }

PanelLayout panel_layout(GgmlType type) { return checked_info(type).layout; }

QuantMatrix pack_quant_matrix(GgmlType type, const void* rows, int N, int K) {
  return pack_quant_matrix(type, rows, N, K, quant_isa_for(Isa::Auto));
}

QuantMatrix pack_quant_matrix(GgmlType type, const void* rows, int N, int K, QuantIsa isa) {
  const TypeInfo& info = checked_info(type);
  const PanelLayout layout = info.layout;
  const std::string name = quant::ggml_type_name(static_cast<uint32_t>(type));
  if (N <= 0 || K <= 0)
    throw std::invalid_argument("pack_quant_matrix: a " + name + " matrix needs N > 0 and K > 0, got N=" +
                                std::to_string(N) + " K=" + std::to_string(K));
  if (K % layout.block != 0)
    throw std::invalid_argument("pack_quant_matrix: " + name + " rows of K=" + std::to_string(K) +
                                " elements are not whole blocks of " + std::to_string(layout.block));
  QuantMatrix w;
  w.type = type, w.N = N, w.K = K;
  w.biased = type == GgmlType::Q8_0 && biased_for(isa);
  const uint8_t flip = w.biased ? 0x80 : 0;
  const int blocks = K / layout.block;
  w.aux_offset = size_t(blocks) * layout.quant_bytes;
  w.panel_stride = (w.aux_offset + size_t(blocks) * layout.aux_bytes + 63) / 64 * 64;
  w.data.assign(w.panel_stride * w.panels(), 0);
  const size_t row_bytes = quant::row_bytes(type, K);
  const auto* src = static_cast<const uint8_t*>(rows);
#pragma omp parallel for schedule(dynamic, 4) if (size_t(N) * row_bytes > (1u << 20))
  for (int p = 0; p < w.panels(); ++p) {
    uint8_t* panel = w.data.data() + p * w.panel_stride;
    const int cols = std::min(QuantMatrix::kPanel, N - p * QuantMatrix::kPanel);
    const uint8_t* first = src + size_t(p) * QuantMatrix::kPanel * row_bytes;
    if (info.bits == 16) {  // f16, bf16: [k][8 columns] of 16-bit values
      for (int c = 0; c < cols; ++c)
        for (int k = 0; k < K; ++k)
          std::memcpy(panel + size_t(k) * 16 + 2 * c, first + c * row_bytes + 2 * size_t(k), 2);
      continue;
    }
    const size_t block_bytes = quant::traits(type).block_bytes;
    for (int b = 0; b < blocks; ++b) {
      Decoded decoded[8] = {};
      for (int c = 0; c < cols; ++c) decoded[c] = decode(type, first + c * row_bytes + b * block_bytes);
      write_units(info.bits, decoded, layout.block, panel + size_t(b) * layout.quant_bytes,
                  layout.quant_bytes / (layout.block / 32), flip);
      write_aux(type, decoded, panel + w.aux_offset + size_t(b) * layout.aux_bytes);
    }
  }
  return w;
}

}  // namespace parley::cpu
