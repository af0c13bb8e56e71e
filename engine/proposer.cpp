#include "engine/proposer.hpp"

#include <stdexcept>

#include "engine/model_proposer.hpp"
#include "engine/mtp_proposer.hpp"
#include "engine/ngram_proposer.hpp"
#include "model/kv_cache.hpp"
#include "model/model_file.hpp"

namespace parley {

namespace {

class NgramDrafts final : public Proposer {
 public:
  NgramDrafts(const SpeculativeConfig& c, int max_model_len)
      : ngram_(c.prompt_lookup_min, c.prompt_lookup_max, c.num_speculative_tokens, max_model_len) {}
  std::vector<std::vector<int>> propose(std::span<const DraftInput> requests) override {
    std::vector<std::vector<int>> drafts;
    for (const DraftInput& r : requests) drafts.push_back(ngram_.propose(r.context));
    return drafts;
  }
  int k() const override { return ngram_.k(); }

 private:
  NgramProposer ngram_;
};

[[noreturn]] void refuse(const std::string& why) { throw std::invalid_argument("--speculative-config: " + why); }

// The draft must speak the target's vocabulary: token ids are exchanged as they are.
void check_draft_vocab(const ModelFile& draft, const ProposerTarget& target, const std::string& path) {
  const int want = target.model->config().vocab_size;
  if (draft.config.vocab_size != want)
    refuse("draft model '" + path + "' has a vocabulary of " + std::to_string(draft.config.vocab_size) +
           " tokens, the target's has " + std::to_string(want));
  if (!draft.vocab || !target.vocab) return;  // a llama2.c checkpoint carries no vocabulary to compare
  for (int id = 0; id < want; ++id)
    if (draft.vocab->pieces[size_t(id)] != target.vocab->pieces[size_t(id)])
      refuse("draft model '" + path + "' has another vocabulary: token " + std::to_string(id) + " is '" +
             draft.vocab->pieces[size_t(id)] + "' there and '" + target.vocab->pieces[size_t(id)] + "' in the target");
}

}  // namespace

std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config, const ProposerTarget& target) {
  const int k = config.num_speculative_tokens;
  if (config.method != SpecMethod::Ngram && (!target.model || !target.kv))
    refuse("method " + config.method_name() + " runs the model on the CPU (--device cpu); on another device use ngram");
  // A proposer running a model reads the first KV group's block table: it must see every position.
  if (config.method != SpecMethod::Ngram) {
    const KvCacheLayout& layout = target.kv->layout();
    if (!layout.has_full_attention_group())
      refuse("method " + config.method_name() +
             " needs a full-attention layer in the target; it has only sliding-window layers");
    if (config.method == SpecMethod::LayerSkip && layout.num_groups() > 1)
      refuse("method layer_skip shares the target's KV blocks, which this model splits into " + layout.describe() +
             "; use ngram or draft_model");
  }
  switch (config.method) {
    case SpecMethod::Ngram:
      return std::make_unique<NgramDrafts>(config, target.max_model_len);
    case SpecMethod::LayerSkip: {
      const int n = target.model->config().n_layers;
      if (config.draft_layers >= n)
        refuse("draft_layers must be below the target's " + std::to_string(n) + " layers, got " +
               std::to_string(config.draft_layers));
      return std::make_unique<ModelProposer>(*target.model, config.draft_layers, *target.kv, k, target.max_model_len);
    }
    case SpecMethod::DraftModel: {
      ModelFile draft;
      try {
        draft = load_model_file(config.model);
      } catch (const std::exception& e) {
        refuse(std::string("draft model: ") + e.what());
      }
      check_draft_vocab(draft, target, config.model);
      auto model = std::make_unique<LlamaModel>(draft.config, std::move(draft.weights), target.model->backend());
      return std::make_unique<ModelProposer>(std::move(model), *target.kv, k, target.max_model_len);
    }
    case SpecMethod::Mtp:
      if (!target.model->has_mtp())
        refuse(
            "method mtp needs a multi-token-prediction head in the target model, and this one has none "
            "(a GGUF carries one as the nextn block: {arch}.nextn_predict_layers = 1); use draft_model or layer_skip");
      return std::make_unique<MtpProposer>(*target.model, *target.kv, k, target.max_model_len);
  }
  refuse("unknown method");
}

}  // namespace parley
