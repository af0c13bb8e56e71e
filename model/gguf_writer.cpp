#include "model/gguf_writer.hpp"

#include "kernels/quant/quantize.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace parley {

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
  if (it != kv_.end())
    it->second = std::move(value);
  else
    kv_.emplace_back(key, std::move(value));
}

bool GgufWriter::remove(const std::string& key) {
  auto it = std::find_if(kv_.begin(), kv_.end(), [&](const auto& kv) { return kv.first == key; });
  if (it == kv_.end()) return false;
  kv_.erase(it);
  return true;
}

std::vector<uint8_t> encode_tensor(const std::string& name, const std::vector<uint64_t>& ne, GgmlType type,
                                   const float* data) {
  if (ne.empty()) throw std::invalid_argument("GGUF tensor '" + name + "': needs 1 to 4 dimensions");
  uint64_t rows = 1;
  for (size_t d = 1; d < ne.size(); ++d) rows *= ne[d];
  const int64_t block = quant::traits(type).block_size, row = int64_t(ne[0]);
  if (ne[0] % uint64_t(block) != 0)
    throw std::invalid_argument("GGUF tensor '" + name + "': " + quant::traits(type).name +
                                " needs a row length that is a multiple of " + std::to_string(block) + ", got " +
                                std::to_string(ne[0]));
  std::vector<uint8_t> bytes(quant::row_bytes(type, row) * rows);
  // Rows are encoded independently, so slices on several threads write the same bytes as one pass.
  const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t parts = std::clamp<int64_t>(int64_t(rows * ne[0] >> 20), 1, std::min<int64_t>(cores, int64_t(rows)));
  std::vector<std::thread> threads;
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t first = int64_t(rows) * p / parts, last = int64_t(rows) * (p + 1) / parts;
    threads.emplace_back(
        [&, first, last] { quant::quantize_chunk(type, data, bytes.data(), first * row, last - first, row); });
  }
  for (std::thread& t : threads) t.join();
  return bytes;
}

void GgufWriter::add_tensor(const std::string& name, std::vector<uint64_t> ne, GgmlType type, const float* data) {
  std::vector<uint8_t> bytes = encode_tensor(name, ne, type, data);
  add_tensor_bytes(name, std::move(ne), type, std::move(bytes));
}

void GgufWriter::check_new(const std::string& name, const std::vector<uint64_t>& ne) const {
  if (ne.empty() || ne.size() > 4) throw std::invalid_argument("GGUF tensor '" + name + "': needs 1 to 4 dimensions");
  for (const auto& t : tensors_)
    if (t.name == name) throw std::invalid_argument("GGUF tensor '" + name + "' added twice");
}

void GgufWriter::add_tensor_bytes(const std::string& name, std::vector<uint64_t> ne, GgmlType type,
                                  std::vector<uint8_t> bytes) {
  check_new(name, ne);
  const uint64_t need = quant::checked_tensor_bytes(type, ne, UINT64_MAX, name);
  if (bytes.size() != need)
    throw std::invalid_argument("GGUF tensor '" + name + "': " + std::to_string(bytes.size()) +
                                " bytes given, its shape and type need " + std::to_string(need));
  tensors_.push_back({name, std::move(ne), type, need, std::move(bytes)});
}

void GgufWriter::declare_tensor(const std::string& name, std::vector<uint64_t> ne, GgmlType type) {
  check_new(name, ne);
  const uint64_t need = quant::checked_tensor_bytes(type, ne, UINT64_MAX, name);
  tensors_.push_back({name, std::move(ne), type, need, {}});
}

void GgufWriter::write(const std::string& path, const TensorProducer& produce) const {
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
    offset += align_up(t.size, alignment);
  }
  header.resize(align_up(header.size(), alignment), '\0');

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot create GGUF file '" + path + "'");
  try {
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    write_data(out, alignment, produce);
    out.flush();
    if (!out) throw std::runtime_error("cannot write GGUF file '" + path + "' (disk full?)");
  } catch (...) {
    out.close();
    std::filesystem::remove(path);  // a half-written file would fail later with a less clear error
    throw;
  }
}

void GgufWriter::write_data(std::ofstream& out, uint64_t alignment, const TensorProducer& produce) const {
  const std::string zeros(alignment, '\0');
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    std::vector<uint8_t> produced;
    if (t.bytes.empty()) {
      if (!produce) throw std::invalid_argument("GGUF tensor '" + t.name + "' was declared but nothing produces it");
      produced = produce(i);
      if (produced.size() != t.size)
        throw std::invalid_argument("GGUF tensor '" + t.name + "': " + std::to_string(produced.size()) +
                                    " bytes produced, its shape and type need " + std::to_string(t.size));
    }
    const std::vector<uint8_t>& bytes = t.bytes.empty() ? produced : t.bytes;
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.write(zeros.data(), static_cast<std::streamsize>(align_up(bytes.size(), alignment) - bytes.size()));
  }
}

}  // namespace parley
