#include "engine/request.hpp"

namespace parley {

bool is_finished(RequestStatus s) {
  return s == RequestStatus::FinishedStopped || s == RequestStatus::FinishedLength ||
         s == RequestStatus::FinishedAborted;
}

FinishReason finish_reason_of(RequestStatus s) {
  switch (s) {
    case RequestStatus::FinishedStopped:
      return FinishReason::Stop;
    case RequestStatus::FinishedLength:
      return FinishReason::Length;
    case RequestStatus::FinishedAborted:
      return FinishReason::Abort;
    default:
      return FinishReason::None;
  }
}

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
    case FinishReason::Abort:
      return "abort";
    case FinishReason::None:
      break;
  }
  return "none";
}

Request::Request(std::string id, std::vector<int> prompt, SamplingParams params, uint64_t seed_, double arrival)
    : request_id(std::move(id)),
      all_token_ids(prompt),  // declared before prompt_token_ids, which takes the prompt next
      prompt_token_ids(std::move(prompt)),
      sampling_params(std::move(params)),
      seed(seed_),
      arrival_time(arrival) {}

void Request::append_output_token(int token) {
  output_token_ids.push_back(token);
  all_token_ids.push_back(token);
}

}  // namespace parley
