// GGUF v3 writer: ordered metadata of any type, tensors encoded from F32, given as raw bytes, or declared and
// produced one at a time while the file is written (so a file larger than memory never sits in it whole).
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "model/gguf.hpp"

namespace parley {

// n_elements(ne) floats encoded as `type` (ne in GGUF order, ne[0] the row length), rows split over the cores.
// Throws std::invalid_argument naming the tensor when the row length is not a multiple of the type's block.
std::vector<uint8_t> encode_tensor(const std::string& name, const std::vector<uint64_t>& ne, GgmlType type,
                                   const float* data);

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

  // Declares a tensor whose bytes write's producer returns when its turn comes.
  void declare_tensor(const std::string& name, std::vector<uint64_t> ne, GgmlType type);

  // The bytes of the index-th tensor added (a declared one), its size as its shape and type need.
  using TensorProducer = std::function<std::vector<uint8_t>(size_t index)>;
  // Writes the file; data offsets and the data section honour general.alignment (default 32). Declared tensors
  // take produce's bytes, in order, one held at a time. Throws std::runtime_error naming the path when it cannot
  // be written, std::invalid_argument when a declared tensor has no producer or gets the wrong size; a file left
  // unfinished by a throw is removed.
  void write(const std::string& path, const TensorProducer& produce = {}) const;

 private:
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;
    GgmlType type;
    uint64_t size;               // bytes in the file
    std::vector<uint8_t> bytes;  // empty for a declared tensor
  };
  void check_new(const std::string& name, const std::vector<uint64_t>& ne) const;
  void write_data(std::ofstream& out, uint64_t alignment, const TensorProducer& produce) const;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<Tensor> tensors_;
};

}  // namespace parley
