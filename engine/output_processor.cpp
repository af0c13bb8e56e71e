// vLLM v1's OutputProcessor and IncrementalDetokenizer stop-string logic, on bytes instead of
// Python characters: text is emitted only up to a UTF-8 character boundary.
#include "engine/output_processor.hpp"

#include <algorithm>
#include <stdexcept>

#include "model/detokenizer.hpp"

namespace parley {

namespace {

bool is_utf8_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

struct StopMatch {
  std::size_t pos = std::string::npos;  // where the stop string starts in the text
  const std::string* stop = nullptr;
};

// The earliest stop string in `text` that ends after byte `check_from` (text before it was searched
// already); on equal positions the first in the list wins.
StopMatch find_stop(const std::string& text, std::size_t check_from, const std::vector<std::string>& stops) {
  StopMatch best;
  for (const std::string& s : stops) {
    const std::size_t start = check_from >= s.size() - 1 ? check_from - (s.size() - 1) : 0;
    const std::size_t pos = text.find(s, start);
    if (pos != std::string::npos && pos < best.pos) best = {pos, &s};
  }
  return best;
}

}  // namespace

struct OutputProcessor::RequestState {
  RequestState(const Tokenizer& tokenizer, int prev_token, bool special_text)
      : detokenizer(tokenizer, prev_token, special_text) {}

  IncrementalDetokenizer detokenizer;
  std::vector<std::string> stops;  // the non-empty stop strings
  bool include_stop_str = false;
  bool ignore_eos = false;
  int min_tokens = 0;
  std::size_t stop_buffer_length = 0;  // bytes held back while a stop string could still be forming
  std::string text;                    // all output text so far, truncated at a stop string
  std::size_t emitted = 0;             // bytes of `text` already sent
  int num_prompt_tokens = 0;
  int num_output_tokens = 0;
  int num_cached_tokens = 0;
};

OutputProcessor::OutputProcessor(const Tokenizer& tokenizer) : tokenizer_(&tokenizer) {}
OutputProcessor::~OutputProcessor() = default;
OutputProcessor::OutputProcessor(OutputProcessor&&) noexcept = default;
OutputProcessor& OutputProcessor::operator=(OutputProcessor&&) noexcept = default;

int OutputProcessor::num_unfinished() const { return int(states_.size()); }
bool OutputProcessor::has_request(const std::string& req_id) const { return states_.count(req_id) != 0; }

void OutputProcessor::add_request(const std::string& req_id, const std::vector<int>& prompt_token_ids,
                                  const SamplingParams& params) {
  if (states_.count(req_id)) throw std::invalid_argument("Request id " + req_id + " already running.");
  // The prompt's last token decides e.g. whether the first output token keeps its leading space.
  RequestState s(*tokenizer_, prompt_token_ids.empty() ? -1 : prompt_token_ids.back(), !params.skip_special_tokens);
  for (const std::string& stop : params.stop)
    if (!stop.empty()) s.stops.push_back(stop);
  s.include_stop_str = params.include_stop_str_in_output;
  s.ignore_eos = params.ignore_eos;
  s.min_tokens = params.min_tokens;
  if (!s.stops.empty() && !s.include_stop_str) {
    std::size_t longest = 0;
    for (const std::string& stop : s.stops) longest = std::max(longest, stop.size());
    s.stop_buffer_length = longest - 1;
  }
  s.num_prompt_tokens = int(prompt_token_ids.size());
  states_.emplace(req_id, std::move(s));
}

OutputProcessor::Processed OutputProcessor::process_outputs(const std::vector<EngineCoreOutput>& outputs) {
  Processed result;
  for (const EngineCoreOutput& eco : outputs) {
    const auto it = states_.find(eco.req_id);
    if (it == states_.end()) continue;  // aborted or stopped here while the engine was still stepping
    RequestState& s = it->second;

    RequestOutput out;
    out.req_id = eco.req_id;
    out.token_ids = eco.new_token_ids;
    out.logprobs = eco.new_logprobs;
    out.prompt_logprobs = eco.prompt_logprobs;
    out.embedding = eco.pooled;
    const int first_index = s.num_output_tokens;  // output index of the first new token
    s.num_output_tokens += int(eco.new_token_ids.size());
    s.num_cached_tokens = std::max(s.num_cached_tokens, eco.num_cached_tokens);

    // A stop token's own text is left out unless the stop is to be included (vLLM's stop_terminated).
    std::size_t num_to_decode = eco.new_token_ids.size();
    if (eco.finish_reason == FinishReason::Stop && !s.include_stop_str && num_to_decode > 0) --num_to_decode;

    // Stop strings are looked for only in text after the first min_tokens tokens (vLLM's min_tokens).
    std::size_t check_from = s.text.size();
    for (std::size_t i = 0; i < num_to_decode; ++i) {
      s.text += s.detokenizer.push(eco.new_token_ids[i]);
      if (first_index + int(i) + 1 <= s.min_tokens) check_from = s.text.size();
    }
    if (eco.finished()) {
      s.text += s.detokenizer.flush();  // the engine is done: an incomplete tail becomes U+FFFD
      if (s.num_output_tokens <= s.min_tokens) check_from = s.text.size();
    }

    StopMatch match;
    if (!s.stops.empty() && s.num_output_tokens > s.min_tokens && s.text.size() > check_from)
      match = find_stop(s.text, check_from, s.stops);
    if (match.stop) {
      s.text.resize(s.include_stop_str ? match.pos + match.stop->size() : match.pos);
      out.finish_reason = FinishReason::Stop;
      out.stop_reason = *match.stop;
      if (!eco.finished()) result.reqs_to_abort.push_back(eco.req_id);
    } else if (eco.finished()) {
      out.finish_reason = eco.finish_reason;
      out.error = eco.error;
      // vLLM reports no stop_reason for EOS (here: any end-of-generation token), the token id for a
      // stop_token_ids hit.
      const bool eos = eco.stop_token && tokenizer_->is_end_of_generation(*eco.stop_token) && !s.ignore_eos;
      if (eco.finish_reason == FinishReason::Stop && eco.stop_token && !eos) out.stop_reason = *eco.stop_token;
    }

    // Hold back what could still be the start of a stop string, and never split a character.
    std::size_t limit = s.text.size();
    if (!out.finished()) {
      limit -= std::min(s.stop_buffer_length, limit);
      while (limit > s.emitted && limit < s.text.size() && is_utf8_continuation(s.text[limit])) --limit;
    }
    if (limit > s.emitted) {
      out.text = s.text.substr(s.emitted, limit - s.emitted);
      s.emitted = limit;
    }
    out.num_prompt_tokens = s.num_prompt_tokens;
    out.num_output_tokens = s.num_output_tokens;
    out.num_cached_tokens = s.num_cached_tokens;
    if (out.finished()) states_.erase(it);
    result.outputs.push_back(std::move(out));
  }
  return result;
}

std::optional<RequestOutput> OutputProcessor::abort_request(const std::string& req_id) {
  const auto it = states_.find(req_id);
  if (it == states_.end()) return std::nullopt;
  RequestOutput out;
  out.req_id = req_id;
  out.finish_reason = FinishReason::Abort;
  out.num_prompt_tokens = it->second.num_prompt_tokens;
  out.num_output_tokens = it->second.num_output_tokens;
  out.num_cached_tokens = it->second.num_cached_tokens;
  states_.erase(it);
  return out;
}

}  // namespace parley
