// The grammar masks a step will apply, computed on another thread while the forward pass runs: a new
// grammar state costs a walk of the vocabulary trie (about 0.6 ms at 128k tokens) that need not wait for
// the logits. Only the first position of each row is known before the pass; the rest are computed when
// sampled. The masks are the same either way, so outputs are too.
#pragma once
#include <future>
#include <vector>

namespace parley {
struct SamplingMetadata;
}

namespace parley::structured {

class StructuredOutputGrammar;

class MaskPrefetch {
 public:
  // For the rows about to be sampled: catches each row's grammar up with its output (this thread) and
  // walks the masks not cached yet on another thread.
  void start(const std::vector<int>& rows, const SamplingMetadata& metadata);
  // Before sampling: the walks are done (rethrows what one threw).
  void wait();

 private:
  std::vector<StructuredOutputGrammar*> missing_;
  std::future<void> running_;
};

}  // namespace parley::structured
