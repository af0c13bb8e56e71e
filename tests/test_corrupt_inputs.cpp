// Corrupted model and tokenizer files either load or fail with an exception: never a crash, a hang
// or a memory error (CI runs this under ASan+UBSan). A small deterministic fuzz over real files.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <stdexcept>

#include "model/model_file.hpp"
#include "model/tokenizer.hpp"
#include "tests/test_support.hpp"

using namespace parley;
using namespace parley::test;

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

struct Mutator {
  uint64_t state;
  uint64_t next() {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  }
  // Overwrites a few bytes (mostly in the first `hot` bytes, where headers and metadata live) or truncates.
  std::string mutate(std::string bytes, size_t hot) {
    if (next() % 5 == 0) return bytes.substr(0, next() % bytes.size());
    for (int i = 0, n = 1 + int(next() % 4); i < n; ++i) {
      const size_t at = next() % 4 ? next() % std::min(hot, bytes.size()) : next() % bytes.size();
      bytes[at] = static_cast<char>(next() % 3 == 0 ? 0xFF : next());
    }
    return bytes;
  }
};

// Returns how many mutants loaded; every other one must have thrown a std::exception.
template <class Load>
int fuzz(const std::string& original, size_t hot, int count, uint64_t seed, const std::string& path, Load load) {
  Mutator m{seed};
  int loaded = 0;
  for (int i = 0; i < count; ++i) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << m.mutate(original, hot);
    try {
      load(path);
      ++loaded;
    } catch (const std::exception&) {}
  }
  return loaded;
}

}  // namespace

TEST_CASE("corrupted GGUF files load or throw, never crash", "[robustness]") {
  TempDir dir;
  const std::string original = read_all(shared_model("stories260K.gguf"));
  REQUIRE(original.size() > 1000000);
  const int loaded = fuzz(original, 15000, 1000, 0xC0FFEE, dir / "mutant.gguf", [](const std::string& p) {
    const ModelFile m = load_model_file(p);
    if (m.vocab) Tokenizer(*m.vocab).encode("Once upon a time", true);
  });
  INFO(loaded << " of 1000 mutants loaded");
  REQUIRE(loaded < 1000);  // the mutations do reach the parser
}

TEST_CASE("corrupted llama2.c checkpoints and tokenizers load or throw, never crash", "[robustness]") {
  TempDir dir;
  const std::string bin = read_all(shared_model("stories260K.bin")), tok = read_all(shared_model("tok512.bin"));
  const int loaded_bin = fuzz(bin, 28, 100, 7, dir / "mutant.bin", [](const std::string& p) { load_model_file(p); });
  REQUIRE(loaded_bin < 100);
  const int loaded_tok = fuzz(tok, tok.size(), 300, 11, dir / "mutant_tok.bin", [](const std::string& p) {
    Tokenizer t(read_llama2c_tokenizer(p, 512));
    const auto ids = t.encode("Lily and Tom \xF0\x9F\x98\x80 \xFF", true);
    t.decode(ids);
  });
  REQUIRE(loaded_tok < 300);
}
