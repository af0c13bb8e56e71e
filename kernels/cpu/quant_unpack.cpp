// quant_matrix_row: one column of the panel layout back to the ggml blocks the
// file held (the inverse of quant_pack.cpp), so a tied embedding reads its rows
// from the head's packed matrix instead of a second copy.
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/cpu/quant_matrix.hpp"
#include "kernels/quant/blocks.hpp"
#include "kernels/quant/quantize.hpp"

namespace parley::cpu {

namespace {

using quant::GgmlType;

// One column's block as the panel stores it (quant_pack.cpp's Decoded).
struct Column {
  uint8_t q[256];
  uint16_t d = 0, m = 0;
  uint8_t sc[16], mn[8];
};

int stored_bits(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0:
      return 8;
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q5_K:
      return 5;
    case GgmlType::Q6_K:
      return 6;
    case GgmlType::Q3_K:
      return 3;
    default:
      return 4;
  }
}

// Column c's quants of one block: per 32 elements, group g's byte 8c + e is
// element 8g + e.
void read_units(int bits, const uint8_t* src, int elements, int unit_bytes, int c, uint8_t* q) {
  for (int u = 0; u < elements / 32; ++u) {
    const uint8_t* in = src + u * unit_bytes;
    for (int g = 0; g < 4; ++g)
      for (int e = 0; e < 8; ++e) {
        const int i = 8 * c + e;
        uint8_t v;
        if (bits == 8) {
          v = in[64 * g + i];
        } else if (bits == 3) {
          v = static_cast<uint8_t>(((in[i] >> (2 * g)) & 3) |
                                   (((i < 32 ? in[64 + i] >> g : in[64 + i - 32] >> (4 + g)) & 1) << 2));
        } else {
          const uint8_t packed = in[64 * (g % 2) + i];
          v = g < 2 ? packed & 15 : packed >> 4;
          if (bits == 5)
            v |= static_cast<uint8_t>(((i < 32 ? in[128 + i] >> g : in[128 + i - 32] >> (4 + g)) & 1) << 4);
          if (bits == 6) v |= static_cast<uint8_t>(((in[128 + i] >> (2 * g)) & 3) << 4);
        }
        q[32 * u + 8 * g + e] = v;
      }
  }
}

void read_aux(GgmlType type, const uint8_t* aux, int c, Column& col) {
  if (type == GgmlType::MXFP4) {
    col.d = aux[c];
    return;
  }
  std::memcpy(&col.d, aux + 2 * c, 2);
  if (type == GgmlType::Q6_K || type == GgmlType::Q3_K || type == GgmlType::IQ4_XS) {
    for (int j = 0; j < (type == GgmlType::IQ4_XS ? 8 : 16); ++j) col.sc[j] = aux[16 + 8 * j + c];
    return;
  }
  if (type == GgmlType::Q4_0 || type == GgmlType::Q5_0 || type == GgmlType::Q8_0) return;
  std::memcpy(&col.m, aux + 16 + 2 * c, 2);
  if (type == GgmlType::Q4_K || type == GgmlType::Q5_K)
    for (int j = 0; j < 8; ++j) col.sc[j] = aux[32 + 8 * j + c], col.mn[j] = aux[96 + 8 * j + c];
}

// Low nibbles: element j in byte j's low half, element j + half in its high
// half.
void join_nibbles(const uint8_t* q, uint8_t* qs, int half) {
  for (int j = 0; j < half; ++j) qs[j] = static_cast<uint8_t>((q[j] & 15) | ((q[j + half] & 15) << 4));
}

void fifth_bits(const uint8_t* q, uint8_t* qh) {
  uint32_t bits = 0;
  for (int i = 0; i < 32; ++i) bits |= uint32_t((q[i] >> 4) & 1) << i;
  std::memcpy(qh, &bits, 4);
}

// The inverse of ggml's get_scale_min_k4.
template <typename Block>
void write_k4(const Column& col, Block& b) {
  b.d = col.d, b.dmin = col.m;
  for (int j = 0; j < 4; ++j) {
    b.scales[j] = static_cast<uint8_t>(col.sc[j] | ((col.sc[j + 4] >> 4) << 6));
    b.scales[j + 4] = static_cast<uint8_t>(col.mn[j] | ((col.mn[j + 4] >> 4) << 6));
    b.scales[j + 8] = static_cast<uint8_t>((col.sc[j + 4] & 15) | ((col.mn[j + 4] & 15) << 4));
  }
  for (int s = 0; s < 4; ++s) join_nibbles(col.q + 64 * s, b.qs + 32 * s, 32);
}

template <typename Block>
void store(const Block& b, uint8_t* out) {
  std::memcpy(out, &b, sizeof(b));
}

void encode(GgmlType type, const Column& col, uint8_t* out) {
  switch (type) {
    case GgmlType::MXFP4: {
      quant::BlockMxfp4 b{static_cast<uint8_t>(col.d), {}};
      join_nibbles(col.q, b.qs, 16);
      return store(b, out);
    }
    case GgmlType::Q4_0: {
      quant::BlockQ4_0 b{col.d, {}};
      join_nibbles(col.q, b.qs, 16);
      return store(b, out);
    }
    case GgmlType::Q4_1: {
      quant::BlockQ4_1 b{col.d, col.m, {}};
      join_nibbles(col.q, b.qs, 16);
      return store(b, out);
    }
    case GgmlType::Q5_0: {
      quant::BlockQ5_0 b{col.d, {}, {}};
      join_nibbles(col.q, b.qs, 16);
      fifth_bits(col.q, b.qh);
      return store(b, out);
    }
    case GgmlType::Q5_1: {
      quant::BlockQ5_1 b{col.d, col.m, {}, {}};
      join_nibbles(col.q, b.qs, 16);
      fifth_bits(col.q, b.qh);
      return store(b, out);
    }
    case GgmlType::Q8_0: {
      quant::BlockQ8_0 b{col.d, {}};
      std::memcpy(b.qs, col.q, 32);
      return store(b, out);
    }
    case GgmlType::Q4_K: {
      quant::BlockQ4_K b{};
      write_k4(col, b);
      return store(b, out);
    }
    case GgmlType::Q5_K: {
      quant::BlockQ5_K b{};
      write_k4(col, b);
      for (int s = 0; s < 4; ++s)
        for (int l = 0; l < 32; ++l)
          b.qh[l] |= static_cast<uint8_t>((((col.q[64 * s + l] >> 4) & 1) << (2 * s)) |
                                          (((col.q[64 * s + 32 + l] >> 4) & 1) << (2 * s + 1)));
      return store(b, out);
    }
    case GgmlType::IQ4_XS: {
      quant::BlockIq4Xs b{};
      b.d = col.d;
      for (int j = 0; j < 8; ++j) {
        const int ls = static_cast<int8_t>(col.sc[j]) + 32;
        b.scales_l[j / 2] |= static_cast<uint8_t>((ls & 0xf) << (4 * (j % 2)));
        b.scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * j));
        join_nibbles(col.q + 32 * j, b.qs + 16 * j, 16);
      }
      return store(b, out);
    }
    case GgmlType::Q3_K: {  // the inverse of quant_pack.cpp's q3_K decode
      quant::BlockQ3_K b{};
      b.d = col.d;
      for (int j = 0; j < 16; ++j) {
        const int l = static_cast<int8_t>(col.sc[j]) + 32;
        b.scales[j % 8] |= static_cast<uint8_t>((l & 0xF) << (j < 8 ? 0 : 4));
        b.scales[8 + j % 4] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
      }
      for (int j = 0; j < 256; ++j) {
        b.qs[32 * (j / 128) + j % 32] |= static_cast<uint8_t>((col.q[j] & 3) << (2 * (j % 128 / 32)));
        b.hmask[j % 32] |= static_cast<uint8_t>(((col.q[j] >> 2) & 1) << (j / 32));
      }
      return store(b, out);
    }
    case GgmlType::Q6_K: {
      quant::BlockQ6_K b{};
      b.d = col.d;
      std::memcpy(b.scales, col.sc, 16);
      for (int h = 0; h < 2; ++h)
        for (int l = 0; l < 32; ++l) {
          const uint8_t* q = col.q + 128 * h;
          b.ql[64 * h + l] = static_cast<uint8_t>((q[l] & 15) | ((q[l + 64] & 15) << 4));
          b.ql[64 * h + l + 32] = static_cast<uint8_t>((q[l + 32] & 15) | ((q[l + 96] & 15) << 4));
          b.qh[32 * h + l] = static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) |
                                                  ((q[l + 96] >> 4) << 6));
        }
      return store(b, out);
    }
    default:
      throw std::invalid_argument("quant_matrix_row: no panel layout for ggml type " +
                                  quant::ggml_type_name(uint32_t(type)));
  }
}

}  // namespace

void quant_matrix_row(const QuantMatrix& w, int row, uint8_t* out) {
  if (row < 0 || row >= w.N)
    throw std::out_of_range("quant_matrix_row: row " + std::to_string(row) + " of " + std::to_string(w.N));
  const PanelLayout layout = panel_layout(w.type);
  const uint8_t* panel = w.data.data() + size_t(row / QuantMatrix::kPanel) * w.panel_stride;
  const int c = row % QuantMatrix::kPanel;
  if (layout.block == 1) {  // f16, bf16: [k][8 columns] of 16-bit values
    for (int k = 0; k < w.K; ++k) std::memcpy(out + 2 * size_t(k), panel + size_t(k) * 16 + 2 * c, 2);
    return;
  }
  const int bits = stored_bits(w.type), blocks = w.K / layout.block;
  const size_t block_bytes = quant::traits(w.type).block_bytes;
  for (int b = 0; b < blocks; ++b) {
    Column col{};
    read_units(bits, panel + size_t(b) * layout.quant_bytes, layout.block, layout.quant_bytes / (layout.block / 32), c,
               col.q);
    if (w.biased)  // q8_0 packed as w ^ 0x80 for vpdpbusd: the file's two's complement back
      for (uint8_t& q : col.q) q ^= 0x80;
    read_aux(w.type, panel + w.aux_offset + size_t(b) * layout.aux_bytes, c, col);
    encode(w.type, col, out + size_t(b) * block_bytes);
  }
}

}  // namespace parley::cpu
