// GGUF v3 (and v2) reader: the file is mmapped; metadata is parsed, tensors point into the mapping.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "kernels/quant/ggml_types.hpp"

namespace parley {

// ggml tensor type ids as stored in GGUF (kernels/quant decodes and encodes them).
using GgmlType = quant::GgmlType;

// GGUF metadata value type ids; the order equals GgufValue::Data's alternative order.
enum class GgufType : uint32_t {
  UInt8 = 0,
  Int8 = 1,
  UInt16 = 2,
  Int16 = 3,
  UInt32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  UInt64 = 10,
  Int64 = 11,
  Float64 = 12,
};

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as little-endian uint32
inline constexpr size_t kGgufDefaultAlignment = 32;

struct GgufValue;
struct GgufArray {
  GgufType elem_type = GgufType::UInt8;
  std::vector<GgufValue> items;  // every item has elem_type (nested arrays allowed)
  bool operator==(const GgufArray&) const = default;
};

struct GgufValue {
  using Data = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string, GgufArray,
                            uint64_t, int64_t, double>;
  Data data;

  GgufType type() const { return static_cast<GgufType>(data.index()); }
  bool operator==(const GgufValue&) const = default;

  // Builds an array of one element type from plain values.
  static GgufValue strings(const std::vector<std::string>& v);
  static GgufValue floats(const std::vector<float>& v);
  static GgufValue int32s(const std::vector<int32_t>& v);
};

const char* gguf_type_name(GgufType t);

// Read-only POSIX mmap of a whole file, unmapped on destruction.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);     // throws std::runtime_error naming the path
  explicit MappedFile(std::vector<uint8_t> bytes);  // bytes already in memory: held, nothing mapped
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::vector<uint8_t> held_;  // the bytes of an in-memory file (data_ points into them)
};

struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> ne;  // GGUF order: ne[0] is the contiguous (row) length
  GgmlType type = GgmlType::F32;
  uint64_t offset = 0;            // from the start of the data section
  const uint8_t* data = nullptr;  // into the mapping
  uint64_t nbytes = 0;

  uint64_t n_elements() const;
};

class GgufFile {
 public:
  // Maps and parses the file; throws std::runtime_error "GGUF file '<path>': <problem>".
  explicit GgufFile(const std::string& path);
  // Parses bytes already in memory, named `name` in errors (fuzz_gguf: ASan sees reads past a heap buffer, not an
  // mmap).
  GgufFile(std::string name, std::vector<uint8_t> bytes);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(std::string_view key) const;  // nullptr when absent
  bool has(std::string_view key) const { return find(key) != nullptr; }
  const GgufValue& at(std::string_view key) const;  // throws "missing key"

  // Typed getters: throw naming the key when it is missing or of another type.
  int64_t get_int(std::string_view key) const;   // any integer type (not bool)
  double get_float(std::string_view key) const;  // float32 or float64
  bool get_bool(std::string_view key) const;
  const std::string& get_string(std::string_view key) const;
  const GgufArray& get_array(std::string_view key) const;
  std::vector<std::string> get_string_array(std::string_view key) const;
  std::vector<float> get_float_array(std::string_view key) const;
  std::vector<int64_t> get_int_array(std::string_view key) const;
  // As above, but `fallback` when the key is absent (a wrong type still throws).
  int64_t get_int(std::string_view key, int64_t fallback) const;
  double get_float(std::string_view key, double fallback) const;
  bool get_bool(std::string_view key, bool fallback) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;  // nullptr when absent
  const GgufTensorInfo& tensor(std::string_view name) const;       // throws "missing tensor"
  // The whole tensor dequantized to F32.
  std::vector<float> dequantize(const GgufTensorInfo& t) const;

  // "GGUF file '<path>': <what>" as a std::runtime_error, for callers' own checks.
  [[noreturn]] void fail(const std::string& what) const;

 private:
  void parse();
  std::string path_;
  MappedFile map_;
  uint32_t version_ = 0;
  size_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::unordered_map<std::string, size_t> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace parley
