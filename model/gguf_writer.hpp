// GGUF v3 writer: ordered metadata of any type, tensors encoded from F32 (or given as raw bytes).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/gguf.hpp"

namespace parley {

class GgufWriter {
 public:
  // Sets a key; replacing an existing key keeps its position, so file order stays deterministic.
  // Throws std::invalid_argument if an array holds an item of another type than its elem_type.
  void set(const std::string& key, GgufValue value);
  void set_u32(const std::string& key, uint32_t v) { set(key, GgufValue{v}); }
  void set_i32(const std::string& key, int32_t v) { set(key, GgufValue{v}); }
  void set_f32(const std::string& key, float v) { set(key, GgufValue{v}); }
  void set_bool(const std::string& key, bool v) { set(key, GgufValue{v}); }
  void set_string(const std::string& key, std::string v) { set(key, GgufValue{std::move(v)}); }
  bool remove(const std::string& key);  // false when the key was not set
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }

  // Adds a tensor from n_elements(ne) floats, encoded as `type`. ne is in GGUF order (ne[0] = row
  // length). Throws std::invalid_argument for a bad shape, a duplicate name, or Q8_0 rows not a
  // multiple of 32.
  void add_tensor(const std::string& name, std::vector<uint64_t> ne, GgmlType type, const float* data);
  // Adds already-encoded bytes (e.g. copied from another GGUF); their size must match ne and type.
  void add_tensor_bytes(const std::string& name, std::vector<uint64_t> ne, GgmlType type, std::vector<uint8_t> bytes);

  // Writes the file; data offsets and the data section honour general.alignment (default 32).
  // Throws std::runtime_error naming the path when it cannot be written.
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;
    GgmlType type;
    std::vector<uint8_t> bytes;
  };
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<Tensor> tensors_;
};

}  // namespace parley
