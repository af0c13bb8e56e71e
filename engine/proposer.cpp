#include "engine/proposer.hpp"

#include <stdexcept>

#include "engine/ngram_proposer.hpp"

namespace parley {

namespace {

class NgramDrafts final : public Proposer {
 public:
  NgramDrafts(const SpeculativeConfig& c, int max_model_len)
      : ngram_(c.prompt_lookup_min, c.prompt_lookup_max, c.num_speculative_tokens, max_model_len) {}
  std::vector<int> propose(const std::string&, std::span<const int> context) override { return ngram_.propose(context); }
  int k() const override { return ngram_.k(); }

 private:
  NgramProposer ngram_;
};

}  // namespace

std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config, int max_model_len) {
  if (config.method != SpecMethod::Ngram)
    throw std::invalid_argument("--speculative-config: method " + config.method_name() +
                                " is not implemented yet (ngram is)");
  return std::make_unique<NgramDrafts>(config, max_model_len);
}

}  // namespace parley
