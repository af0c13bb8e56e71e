// Portable kernels of the quantized matmul: plain loops over the same panels, with the same integer sums and
// the same float operations, in the same order, as the vector ISAs (std::fma is the fused multiply-add).
#include <cmath>

#include "kernels/cpu/qmatmul_impl.hpp"
#include "kernels/quant/blocks.hpp"
#include "kernels/quant/half.hpp"

namespace parley::cpu::qmm {
namespace {

struct Generic {
  struct Bytes {
    uint8_t v[64];
  };
  struct Cols {
    int32_t v[8];
  };
  using I32 = Cols;  // already one sum per column
  using Scale = Cols;
  struct Pairs {
    int32_t first[8], second[8];
  };
  struct F {
    float v[8];
  };
  static constexpr int MR = 4;
  static constexpr int MR_HALF = 4;

  static Bytes load(const uint8_t* p) {
    Bytes b;
    std::memcpy(b.v, p, sizeof(b.v));
    return b;
  }
  static constexpr bool kBiasedSigned = false;  // signed weights as two's complement bytes
  static Bytes flip_sign(Bytes b) {
    for (uint8_t& v : b.v) v ^= 0x80;
    return b;
  }
  static Bytes lo_nibbles(Bytes b) {
    for (uint8_t& v : b.v) v &= 15;
    return b;
  }
  static Bytes lookup(Bytes b, const int8_t* table) {
    for (uint8_t& v : b.v) v = static_cast<uint8_t>(table[v]);
    return b;
  }
  static Cols cols_s8(const int8_t* p) {
    Cols out;
    for (int c = 0; c < 8; ++c) out.v[c] = p[c];
    return out;
  }
  static Cols mullo(Cols a, Cols b) {
    for (int c = 0; c < 8; ++c) a.v[c] *= b.v[c];
    return a;
  }
  static Bytes hi_nibbles(Bytes b) {
    for (uint8_t& v : b.v) v >>= 4;
    return b;
  }
  struct Fifth {
    uint8_t v[32];
  };
  static Fifth load_fifth(const uint8_t* p) {
    Fifth f;
    std::memcpy(f.v, p, sizeof(f.v));
    return f;
  }
  template <int Group, int To = 4>  // the plane's bit for group Group to bit To
  static Bytes with_bit4(Bytes b, const Fifth& high) {
    for (int i = 0; i < 32; ++i) {
      b.v[i] |= static_cast<uint8_t>(((high.v[i] >> Group) & 1) << To);
      b.v[i + 32] |= static_cast<uint8_t>(((high.v[i] >> (4 + Group)) & 1) << To);
    }
    return b;
  }
  template <int Group>
  static Bytes with_bit2(Bytes b, const Fifth& high) {
    return with_bit4<Group, 2>(b, high);
  }
  template <int Group>
  static Bytes crumbs(Bytes b) {
    for (uint8_t& v : b.v) v = static_cast<uint8_t>((v >> (2 * Group)) & 3);
    return b;
  }
  template <int Shift>
  static Bytes with_hi2(Bytes q, Bytes high) {
    for (int i = 0; i < 64; ++i) q.v[i] |= static_cast<uint8_t>(((high.v[i] >> Shift) & 3) << 4);
    return q;
  }

  template <int n>
  static I32 dot(const Bytes* g, const int8_t* x) {
    I32 out{};
    for (int c = 0; c < 8; ++c)
      for (int i = 0; i < n; ++i)
        for (int e = 0; e < 8; ++e) out.v[c] += int32_t(g[i].v[8 * c + e]) * x[8 * i + e];
    return out;
  }
  template <int n>
  static I32 dot_scaled(const Bytes* g, const int8_t* x, Scale s) {
    I32 out = dot<n>(g, x);
    for (int c = 0; c < 8; ++c) out.v[c] *= s.v[c];
    return out;
  }
  static Cols dot_signed(const Bytes* g, const int8_t* x, int32_t) {
    Cols out{};
    for (int c = 0; c < 8; ++c)
      for (int i = 0; i < 4; ++i)
        for (int e = 0; e < 8; ++e) out.v[c] += int32_t(static_cast<int8_t>(g[i].v[8 * c + e])) * x[8 * i + e];
    return out;
  }
  static Cols dot_signed_any(const Bytes* g, const int8_t* x, int32_t xsum) { return dot_signed(g, x, xsum); }
  static I32 zero_sums() { return {}; }
  static I32 add_sums(I32 a, I32 b) { return add(a, b); }
  static Cols col_sums(I32 a) { return a; }
  static Scale scale_u8(const uint8_t* p) {
    Scale s;
    for (int c = 0; c < 8; ++c) s.v[c] = p[c];
    return s;
  }
  static Scale scale_s8(const int8_t* p) {
    Scale s;
    for (int c = 0; c < 8; ++c) s.v[c] = p[c];
    return s;
  }
  static Pairs pairs_u8(const uint8_t* p) {
    Pairs s;
    for (int c = 0; c < 8; ++c) s.first[c] = p[c], s.second[c] = p[8 + c];
    return s;
  }
  static Pairs pairs_s8(const int8_t* p) {
    Pairs s;
    for (int c = 0; c < 8; ++c) s.first[c] = p[c], s.second[c] = p[8 + c];
    return s;
  }
  static Cols madd_pairs(const Pairs& p, int32_t both) {  // a and b: the int16 halves of both, low first
    const int32_t a = int16_t(uint32_t(both) & 0xffffu), b = int16_t(uint32_t(both) >> 16);
    Cols out;
    for (int c = 0; c < 8; ++c) out.v[c] = p.first[c] * a + p.second[c] * b;
    return out;
  }
  static Cols set1(int32_t a) {
    Cols out;
    for (int32_t& v : out.v) v = a;
    return out;
  }
  static Cols add(Cols a, Cols b) {
    for (int c = 0; c < 8; ++c) a.v[c] += b.v[c];
    return a;
  }
  static Cols sub(Cols a, Cols b) {
    for (int c = 0; c < 8; ++c) a.v[c] -= b.v[c];
    return a;
  }
  static Cols shl5(Cols a) {
    for (int32_t& v : a.v) v *= 32;
    return a;
  }
  static Cols shl2(Cols a) {
    for (int32_t& v : a.v) v *= 4;
    return a;
  }

  static F fzero() { return {}; }
  static F fset1(float a) {
    F out;
    for (float& v : out.v) v = a;
    return out;
  }
  static F to_float(Cols a) {
    F out;
    for (int c = 0; c < 8; ++c) out.v[c] = static_cast<float>(a.v[c]);
    return out;
  }
  static F half8(const uint8_t* p) {
    F out;
    for (int c = 0; c < 8; ++c) {
      uint16_t h;
      std::memcpy(&h, p + 2 * c, 2);
      out.v[c] = quant::half_to_float(h);
    }
    return out;
  }
  static F e8m0x8(const uint8_t* p) {
    F out;
    for (int c = 0; c < 8; ++c) out.v[c] = quant::e8m0_half(p[c]);
    return out;
  }
  static F bf16x8(const uint8_t* p) {
    F out;
    for (int c = 0; c < 8; ++c) {
      uint16_t h;
      std::memcpy(&h, p + 2 * c, 2);
      out.v[c] = quant::bf16_to_float(h);
    }
    return out;
  }
  static F mul(F a, F b) {
    for (int c = 0; c < 8; ++c) a.v[c] *= b.v[c];
    return a;
  }
  static F fma(F a, F b, F acc) {  // a * b + acc, rounded once
    for (int c = 0; c < 8; ++c) acc.v[c] = std::fma(a.v[c], b.v[c], acc.v[c]);
    return acc;
  }
  static F fnma(F a, F b, F acc) {  // acc - a * b, rounded once
    for (int c = 0; c < 8; ++c) acc.v[c] = std::fma(-a.v[c], b.v[c], acc.v[c]);
    return acc;
  }
  static void store(float* out, const F& a, int cols) { std::copy_n(a.v, cols, out); }
};

}  // namespace

void panels_generic(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p_begin,
                    int p_end) {
  panels<Generic>(x, w, out, m_begin, m_end, p_begin, p_end);
}

}  // namespace parley::cpu::qmm
