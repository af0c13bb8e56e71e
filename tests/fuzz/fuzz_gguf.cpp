// GGUF files, read from memory (a heap copy, so ASan sees a read past the end, which an mmap would hide); then every
// key is read with the getter of its type, every tensor dequantized and the model's shape taken from the metadata.
// A broken file may only throw std::runtime_error (the reader's errors) or std::invalid_argument (a shape
// LlamaConfig refuses).
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/architecture.hpp"
#include "model/gguf.hpp"

using namespace parley;

namespace {

void read_everything(const GgufFile& f) {
  for (const auto& [key, value] : f.metadata()) {
    switch (value.type()) {
      case GgufType::String:
        f.get_string(key);
        break;
      case GgufType::Bool:
        f.get_bool(key);
        break;
      case GgufType::Float32:
      case GgufType::Float64:
        f.get_float(key);
        break;
      case GgufType::Array: {
        const GgufType elem = f.get_array(key).elem_type;
        if (elem == GgufType::String)
          f.get_string_array(key);
        else if (elem == GgufType::Float32 || elem == GgufType::Float64)
          f.get_float_array(key);
        else if (elem != GgufType::Bool && elem != GgufType::Array)
          f.get_int_array(key);
        break;
      }
      default:
        f.get_int(key);
    }
  }
  for (const GgufTensorInfo& t : f.tensors())
    if (f.dequantize(t).size() != t.n_elements()) __builtin_trap();
  config_from_gguf(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const GgufFile f("fuzz input", std::vector<uint8_t>(data, data + size));
    read_everything(f);
  } catch (const std::runtime_error&) {
  } catch (const std::invalid_argument&) {}
  return 0;
}
