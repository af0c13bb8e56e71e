#include "model/gguf_writer.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace parley {

// ---- encoding (the decoding half lives in gguf.cpp) ----

uint16_t fp32_to_fp16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u)  // inf stays inf; NaN stays a (quiet) NaN
    return sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u);
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds (to even) past 65504
  if (ax < 0x38800000u) {  // below 2^-14: a half subnormal (or zero), in units of 2^-24
    uint32_t e = ax >> 23;
    uint32_t shift = 126 - e;
    if (shift > 24) return sign;  // below 2^-25: rounds to zero
    uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t h = (ax - 0x38000000u) >> 13;  // rebias 127 -> 15 and drop 13 mantissa bits
  uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry correctly bumps the exponent
  return static_cast<uint16_t>(sign | h);
}

uint16_t fp32_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

std::vector<uint8_t> quantize_row(GgmlType t, const float* src, uint64_t n) {
  std::vector<uint8_t> out(ggml_nbytes(t, n));
  uint8_t* p = out.data();
  uint16_t h;
  switch (t) {
    case GgmlType::F32: std::memcpy(p, src, n * 4); break;
    case GgmlType::F16:
      for (uint64_t i = 0; i < n; ++i) { h = fp32_to_fp16(src[i]); std::memcpy(p + 2 * i, &h, 2); }
      break;
    case GgmlType::BF16:
      for (uint64_t i = 0; i < n; ++i) { h = fp32_to_bf16(src[i]); std::memcpy(p + 2 * i, &h, 2); }
      break;
    case GgmlType::Q8_0:
      // ggml's reference: d = amax/127 stored as fp16, q = round(x/d) with the F32 d.
      for (uint64_t b = 0; b < n / kQ8Block; ++b, p += 34) {
        const float* x = src + b * kQ8Block;
        float amax = 0.0f;
        for (size_t j = 0; j < kQ8Block; ++j) amax = std::max(amax, std::fabs(x[j]));
        float d = amax / 127.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        h = fp32_to_fp16(d);
        std::memcpy(p, &h, 2);
        for (size_t j = 0; j < kQ8Block; ++j)
          p[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(x[j] * id)));
      }
      break;
  }
  return out;
}

GgufValue GgufValue::strings(const std::vector<std::string>& v) {
  GgufArray a{GgufType::String, {}};
  for (const auto& s : v) a.items.push_back(GgufValue{s});
  return GgufValue{std::move(a)};
}
GgufValue GgufValue::floats(const std::vector<float>& v) {
  GgufArray a{GgufType::Float32, {}};
  for (float f : v) a.items.push_back(GgufValue{f});
  return GgufValue{std::move(a)};
}
GgufValue GgufValue::int32s(const std::vector<int32_t>& v) {
  GgufArray a{GgufType::Int32, {}};
  for (int32_t i : v) a.items.push_back(GgufValue{i});
  return GgufValue{std::move(a)};
}


// ---- writer ----

namespace {

void check_value(const std::string& key, const GgufValue& v) {
  if (v.type() != GgufType::Array) return;
  const auto& a = std::get<GgufArray>(v.data);
  for (const auto& item : a.items) {
    if (item.type() != a.elem_type)
      throw std::invalid_argument("GGUF key '" + key + "': array of " + gguf_type_name(a.elem_type) +
                                  " holds an item of type " + gguf_type_name(item.type()));
    check_value(key, item);
  }
}

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

void put_value(std::string& out, const GgufValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          put_string(out, x);
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          put<uint32_t>(out, static_cast<uint32_t>(x.elem_type));
          put<uint64_t>(out, x.items.size());
          for (const auto& item : x.items) put_value(out, item);
        } else if constexpr (std::is_same_v<T, bool>) {
          put<uint8_t>(out, x ? 1 : 0);
        } else {
          put<T>(out, x);
        }
      },
      v.data);
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

void GgufWriter::set(const std::string& key, GgufValue value) {
  check_value(key, value);
  auto it = std::find_if(kv_.begin(), kv_.end(), [&](const auto& kv) { return kv.first == key; });
  if (it != kv_.end()) it->second = std::move(value);
  else kv_.emplace_back(key, std::move(value));
}

bool GgufWriter::remove(const std::string& key) {
  auto it = std::find_if(kv_.begin(), kv_.end(), [&](const auto& kv) { return kv.first == key; });
  if (it == kv_.end()) return false;
  kv_.erase(it);
  return true;
}

void GgufWriter::add_tensor(const std::string& name, std::vector<uint64_t> ne, GgmlType type,
                            const float* data) {
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;
  if (type == GgmlType::Q8_0 && !ne.empty() && ne[0] % kQ8Block != 0)
    throw std::invalid_argument("GGUF tensor '" + name + "': Q8_0 needs a row length that is a multiple of 32, got " +
                                std::to_string(ne[0]));
  add_tensor_bytes(name, std::move(ne), type, quantize_row(type, data, n));
}

void GgufWriter::add_tensor_bytes(const std::string& name, std::vector<uint64_t> ne, GgmlType type,
                                  std::vector<uint8_t> bytes) {
  if (ne.empty() || ne.size() > 4)
    throw std::invalid_argument("GGUF tensor '" + name + "': needs 1 to 4 dimensions");
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;
  if (bytes.size() != ggml_nbytes(type, n))
    throw std::invalid_argument("GGUF tensor '" + name + "': " + std::to_string(bytes.size()) +
                                " bytes given, its shape and type need " + std::to_string(ggml_nbytes(type, n)));
  for (const auto& t : tensors_)
    if (t.name == name) throw std::invalid_argument("GGUF tensor '" + name + "' added twice");
  tensors_.push_back({name, std::move(ne), type, std::move(bytes)});
}

void GgufWriter::write(const std::string& path) const {
  uint64_t alignment = kGgufDefaultAlignment;
  for (const auto& [key, v] : kv_)
    if (key == "general.alignment") {
      if (v.type() != GgufType::UInt32 || std::popcount(std::get<uint32_t>(v.data)) != 1)
        throw std::invalid_argument("GGUF general.alignment must be a uint32 power of two");
      alignment = std::get<uint32_t>(v.data);
    }

  std::string header;
  put<uint32_t>(header, kGgufMagic);
  put<uint32_t>(header, 3);
  put<uint64_t>(header, tensors_.size());
  put<uint64_t>(header, kv_.size());
  for (const auto& [key, v] : kv_) {
    put_string(header, key);
    put<uint32_t>(header, static_cast<uint32_t>(v.type()));
    put_value(header, v);
  }
  uint64_t offset = 0;  // each tensor starts aligned within the data section, as ggml lays it out
  for (const auto& t : tensors_) {
    put_string(header, t.name);
    put<uint32_t>(header, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne) put<uint64_t>(header, d);
    put<uint32_t>(header, static_cast<uint32_t>(t.type));
    put<uint64_t>(header, offset);
    offset += align_up(t.bytes.size(), alignment);
  }
  header.resize(align_up(header.size(), alignment), '\0');

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot create GGUF file '" + path + "'");
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  const std::string zeros(alignment, '\0');
  for (const auto& t : tensors_) {
    out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
    out.write(zeros.data(), static_cast<std::streamsize>(align_up(t.bytes.size(), alignment) - t.bytes.size()));
  }
  out.flush();
  if (!out) throw std::runtime_error("cannot write GGUF file '" + path + "' (disk full?)");
}

}  // namespace parley
