#include "model/gguf.hpp"

#include "kernels/quant/quantize.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace parley {

static_assert(std::endian::native == std::endian::little, "GGUF is little-endian; so is this reader");

// ---- types and number formats ----

const char* gguf_type_name(GgufType t) {
  static constexpr const char* kNames[] = {"uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
                                           "bool",  "string", "array",  "uint64", "int64",  "float64"};
  auto i = static_cast<uint32_t>(t);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

uint64_t GgufTensorInfo::n_elements() const {
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;
  return n;
}

// ---- mapping ----

MappedFile::MappedFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw std::runtime_error("cannot stat '" + path + "': " + std::strerror(err));
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {  // mmap rejects length 0; an empty file simply has no bytes
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw std::runtime_error("cannot mmap '" + path + "': " + std::strerror(err));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file alive
}

MappedFile::MappedFile(std::vector<uint8_t> bytes)
    : data_(bytes.empty() ? nullptr : bytes.data()), size_(bytes.size()), held_(std::move(bytes)) {}

MappedFile::~MappedFile() {
  if (data_ && held_.empty()) ::munmap(const_cast<uint8_t*>(data_), size_);
}

// A moved vector keeps its buffer, so data_ stays valid for held bytes.
MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), held_(std::move(o.held_)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_ && held_.empty()) ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    held_ = std::move(o.held_);
  }
  return *this;
}

// ---- parsing ----

namespace {

constexpr int kMaxArrayDepth = 8;  // bounds recursion on hostile nesting
constexpr uint32_t kMaxDims = 4;   // GGML_MAX_DIMS

// Bounds-checked little-endian reads; every failure names what was being read.
struct Cursor {
  const GgufFile& file;
  const uint8_t* base;
  size_t size;
  size_t pos = 0;

  size_t left() const { return size - pos; }
  void need(size_t n, const std::string& what) const {
    if (n > left())
      file.fail("truncated while reading " + what + " (need " + std::to_string(n) + " bytes at offset " +
                std::to_string(pos) + ", file has " + std::to_string(size) + ")");
  }
  template <class T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, base + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  std::string read_string(const std::string& what) {
    auto n = read<uint64_t>(what + " length");
    need(n, what);
    std::string s(reinterpret_cast<const char*>(base + pos), n);
    pos += n;
    return s;
  }

  GgufValue read_value(GgufType type, const std::string& key, int depth) {
    const std::string what = "value of key '" + key + "'";
    switch (type) {
      case GgufType::UInt8:
        return {read<uint8_t>(what)};
      case GgufType::Int8:
        return {read<int8_t>(what)};
      case GgufType::UInt16:
        return {read<uint16_t>(what)};
      case GgufType::Int16:
        return {read<int16_t>(what)};
      case GgufType::UInt32:
        return {read<uint32_t>(what)};
      case GgufType::Int32:
        return {read<int32_t>(what)};
      case GgufType::Float32:
        return {read<float>(what)};
      case GgufType::Bool:
        return {read<uint8_t>(what) != 0};
      case GgufType::String:
        return {read_string(what)};
      case GgufType::UInt64:
        return {read<uint64_t>(what)};
      case GgufType::Int64:
        return {read<int64_t>(what)};
      case GgufType::Float64:
        return {read<double>(what)};
      case GgufType::Array: {
        if (depth >= kMaxArrayDepth) file.fail("key '" + key + "': arrays nested too deeply");
        auto elem = read<uint32_t>("array type of key '" + key + "'");
        if (elem > static_cast<uint32_t>(GgufType::Float64))
          file.fail("key '" + key + "' is an array of unknown value type " + std::to_string(elem));
        auto n = read<uint64_t>("array length of key '" + key + "'");
        if (n > left())  // every element takes at least one byte
          file.fail("truncated or corrupt: key '" + key + "' declares " + std::to_string(n) +
                    " array elements but only " + std::to_string(left()) + " bytes are left");
        GgufArray arr{static_cast<GgufType>(elem), {}};
        arr.items.reserve(n);
        for (uint64_t i = 0; i < n; ++i) arr.items.push_back(read_value(arr.elem_type, key, depth + 1));
        return {std::move(arr)};
      }
    }
    file.fail("key '" + key + "' has unknown value type " + std::to_string(static_cast<uint32_t>(type)));
  }
};

bool is_integer(GgufType t) {
  return t == GgufType::UInt8 || t == GgufType::Int8 || t == GgufType::UInt16 || t == GgufType::Int16 ||
         t == GgufType::UInt32 || t == GgufType::Int32 || t == GgufType::UInt64 || t == GgufType::Int64;
}

// Integer alternatives as int64; uint64 above INT64_MAX is rejected by the caller's range check.
int64_t as_int(const GgufValue& v) {
  return std::visit(
      [](const auto& x) -> int64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
          return static_cast<int64_t>(x);
        else
          return 0;
      },
      v.data);
}

}  // namespace

void GgufFile::fail(const std::string& what) const { throw std::runtime_error("GGUF file '" + path_ + "': " + what); }

GgufFile::GgufFile(const std::string& path) : path_(path), map_(path) { parse(); }
GgufFile::GgufFile(std::string name, std::vector<uint8_t> bytes) : path_(std::move(name)), map_(std::move(bytes)) {
  parse();
}

void GgufFile::parse() {
  Cursor c{*this, map_.data(), map_.size()};
  if (c.read<uint32_t>("magic") != kGgufMagic) fail("not a GGUF file (bad magic)");
  version_ = c.read<uint32_t>("version");
  if (version_ != 2 && version_ != 3)
    fail("unsupported GGUF version " + std::to_string(version_) + " (Parley reads v2 and v3)");
  auto n_tensors = c.read<uint64_t>("tensor count");
  auto n_kv = c.read<uint64_t>("metadata count");
  // Real files have a few thousand entries; past this the header is corrupt, not just long.
  constexpr uint64_t kMaxCount = uint64_t{1} << 24;
  if (n_kv > kMaxCount || n_tensors > kMaxCount)
    fail("absurd counts: " + std::to_string(n_tensors) + " tensors and " + std::to_string(n_kv) +
         " metadata keys (at most " + std::to_string(kMaxCount) + " each)");
  kv_.reserve(std::min<uint64_t>(n_kv, c.left() / 13));  // a key-value takes >= 13 bytes
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.read_string("metadata key #" + std::to_string(i));
    auto type = c.read<uint32_t>("value type of key '" + key + "'");
    if (type > static_cast<uint32_t>(GgufType::Float64))
      fail("key '" + key + "' has unknown value type " + std::to_string(type));
    GgufValue v = c.read_value(static_cast<GgufType>(type), key, 0);
    if (!kv_index_.emplace(key, kv_.size()).second) fail("duplicate key '" + key + "'");
    kv_.emplace_back(std::move(key), std::move(v));
  }

  int64_t align = get_int("general.alignment", static_cast<int64_t>(kGgufDefaultAlignment));
  if (align <= 0 || (align & (align - 1)) != 0 || align > (1 << 20))
    fail("general.alignment " + std::to_string(align) + " is not a power of two");
  alignment_ = static_cast<size_t>(align);

  tensors_.reserve(std::min<uint64_t>(n_tensors, c.left() / 24));  // a tensor info takes >= 24
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t;
    t.name = c.read_string("tensor name #" + std::to_string(i));
    const std::string what = "tensor '" + t.name + "'";
    auto n_dims = c.read<uint32_t>("dimension count of " + what);
    if (n_dims == 0 || n_dims > kMaxDims)
      fail(what + " has " + std::to_string(n_dims) + " dimensions (1 to 4 allowed)");
    uint64_t n = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      t.ne.push_back(c.read<uint64_t>("dimensions of " + what));
      if (t.ne.back() == 0 || t.ne.back() > (uint64_t{1} << 40) / n)
        fail(what + " has an absurd dimension " + std::to_string(t.ne.back()));
      n *= t.ne.back();
    }
    const auto type = c.read<uint32_t>("type of " + what);
    try {  // a type Parley cannot decode, or rows that are not whole blocks, named with the tensor
      t.type = quant::checked_weight_type(type, t.name);
      t.nbytes = quant::checked_tensor_bytes(t.type, t.ne, UINT64_MAX, t.name);
    } catch (const std::runtime_error& e) {
      fail(e.what());
    }
    t.offset = c.read<uint64_t>("data offset of " + what);
    if (t.offset % alignment_ != 0)
      fail(what + " data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
           std::to_string(alignment_));
    if (!tensor_index_.emplace(t.name, tensors_.size()).second) fail("duplicate tensor '" + t.name + "'");
    tensors_.push_back(std::move(t));
  }

  data_offset_ = (c.pos + alignment_ - 1) / alignment_ * alignment_;
  const uint64_t size = map_.size();
  for (auto& t : tensors_) {
    if (data_offset_ > size || t.offset > size - data_offset_ || t.nbytes > size - data_offset_ - t.offset)
      fail("truncated: data of tensor '" + t.name + "' (" + std::to_string(t.nbytes) + " bytes at offset " +
           std::to_string(data_offset_ + t.offset) + ") extends past the end of the file (" + std::to_string(size) +
           " bytes)");
    t.data = map_.data() + data_offset_ + t.offset;
  }
}

// ---- lookups ----

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(std::string(key));
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufValue& GgufFile::at(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) fail("missing key '" + std::string(key) + "'");
  return *v;
}

namespace {
[[noreturn]] void wrong_type(const GgufFile& f, std::string_view key, const GgufValue& v, const char* want) {
  std::string have = gguf_type_name(v.type());
  if (v.type() == GgufType::Array)
    have = std::string("an array of ") + gguf_type_name(std::get<GgufArray>(v.data).elem_type);
  f.fail("key '" + std::string(key) + "' has type " + have + ", expected " + want);
}
}  // namespace

int64_t GgufFile::get_int(std::string_view key) const {
  const GgufValue& v = at(key);
  if (!is_integer(v.type())) wrong_type(*this, key, v, "an integer");
  if (v.type() == GgufType::UInt64 && std::get<uint64_t>(v.data) > uint64_t(INT64_MAX))
    fail("key '" + std::string(key) + "' is too large");
  return as_int(v);
}

double GgufFile::get_float(std::string_view key) const {
  const GgufValue& v = at(key);
  if (v.type() == GgufType::Float32) return std::get<float>(v.data);
  if (v.type() == GgufType::Float64) return std::get<double>(v.data);
  wrong_type(*this, key, v, "a float");
}

bool GgufFile::get_bool(std::string_view key) const {
  const GgufValue& v = at(key);
  if (v.type() != GgufType::Bool) wrong_type(*this, key, v, "a bool");
  return std::get<bool>(v.data);
}

const std::string& GgufFile::get_string(std::string_view key) const {
  const GgufValue& v = at(key);
  if (v.type() != GgufType::String) wrong_type(*this, key, v, "a string");
  return std::get<std::string>(v.data);
}

const GgufArray& GgufFile::get_array(std::string_view key) const {
  const GgufValue& v = at(key);
  if (v.type() != GgufType::Array) wrong_type(*this, key, v, "an array");
  return std::get<GgufArray>(v.data);
}

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
  const GgufArray& a = get_array(key);
  if (a.elem_type != GgufType::String) wrong_type(*this, key, at(key), "an array of string");
  std::vector<std::string> out;
  out.reserve(a.items.size());
  for (const auto& v : a.items) out.push_back(std::get<std::string>(v.data));
  return out;
}

std::vector<float> GgufFile::get_float_array(std::string_view key) const {
  const GgufArray& a = get_array(key);
  std::vector<float> out;
  out.reserve(a.items.size());
  if (a.elem_type == GgufType::Float32)
    for (const auto& v : a.items) out.push_back(std::get<float>(v.data));
  else if (a.elem_type == GgufType::Float64)
    for (const auto& v : a.items) out.push_back(static_cast<float>(std::get<double>(v.data)));
  else
    wrong_type(*this, key, at(key), "an array of float32");
  return out;
}

std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const {
  const GgufArray& a = get_array(key);
  if (!is_integer(a.elem_type)) wrong_type(*this, key, at(key), "an array of integers");
  std::vector<int64_t> out;
  out.reserve(a.items.size());
  for (const auto& v : a.items) out.push_back(as_int(v));
  return out;
}

int64_t GgufFile::get_int(std::string_view key, int64_t fb) const { return has(key) ? get_int(key) : fb; }
double GgufFile::get_float(std::string_view key, double fb) const { return has(key) ? get_float(key) : fb; }
bool GgufFile::get_bool(std::string_view key, bool fb) const { return has(key) ? get_bool(key) : fb; }

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensorInfo& GgufFile::tensor(std::string_view name) const {
  const GgufTensorInfo* t = find_tensor(name);
  if (!t) fail("missing tensor '" + std::string(name) + "'");
  return *t;
}

std::vector<float> GgufFile::dequantize(const GgufTensorInfo& t) const {
  std::vector<float> out(t.n_elements());
  quant::dequantize_row(t.type, t.data, out.data(), int64_t(out.size()));
  return out;
}

}  // namespace parley
