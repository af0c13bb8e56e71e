#include "engine/structured_output/mask_prefetch.hpp"

#include "engine/sampling_metadata.hpp"
#include "engine/structured_output/compiled_grammar.hpp"

namespace parley::structured {

void MaskPrefetch::start(const std::vector<int>& rows, const SamplingMetadata& metadata) {
  wait();
  missing_.clear();
  for (int row : rows)
    if (StructuredOutputGrammar* grammar = metadata.grammars[size_t(row)]) {
      grammar->sync(metadata.output_token_ids(row));
      if (grammar->mask_missing()) missing_.push_back(grammar);
    }
  if (missing_.empty()) return;  // the usual case inside a string: no thread started
  running_ = std::async(std::launch::async, [this] {
    for (StructuredOutputGrammar* g : missing_) g->prefetch_mask();
  });
}

void MaskPrefetch::wait() {
  if (running_.valid()) running_.get();
}

}  // namespace parley::structured
