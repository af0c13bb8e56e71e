#include "model/model_source.hpp"

#include <algorithm>
#include <stdexcept>

#include "model/random_model.hpp"
#include "model/tokenizer.hpp"

namespace parley {
namespace {

constexpr uint64_t kBuiltinSeed = 0x5EED;

}  // namespace

ModelFile load_model_with_vocab(const std::string& model_path, const std::string& tokenizer_path) {
  ModelFile m =
      model_path.empty() ? make_random_model(builtin_model_config(), kBuiltinSeed) : load_model_file(model_path);
  if (!tokenizer_path.empty()) {
    m.vocab = is_gguf_file(tokenizer_path) ? load_gguf_vocab(tokenizer_path)
                                           : read_llama2c_tokenizer(tokenizer_path, m.config.vocab_size);
    if (!m.vocab) throw std::runtime_error("tokenizer file '" + tokenizer_path + "' has no vocabulary");
  }
  if (!m.vocab)
    throw std::runtime_error("model '" + model_path +
                             "' carries no tokenizer: pass --tokenizer (a llama2.c tokenizer.bin or a GGUF)");
  if (m.vocab->size() != m.config.vocab_size)
    throw std::runtime_error("tokenizer has " + std::to_string(m.vocab->size()) +
                             " tokens but the model's vocabulary is " + std::to_string(m.config.vocab_size));
  return m;
}

std::vector<int> default_stop_token_ids(const Vocab& vocab) {
  std::vector<int> ids = end_of_generation_ids(vocab);
  const bool spm = vocab.kind == TokenizerKind::SentencePiece;
  if (spm && vocab.bos_id >= 0 && std::find(ids.begin(), ids.end(), vocab.bos_id) == ids.end())
    ids.push_back(vocab.bos_id);
  return ids;
}

}  // namespace parley
