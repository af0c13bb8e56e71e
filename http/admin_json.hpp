// The /admin views as JSON, made here only: /admin/requests and /admin/actors for one engine (an object), or for
// several data-parallel engines ({"engines": [...]}, one object each).
#pragma once
#include <string>
#include <vector>

#include "engine/admin_view.hpp"

namespace parley::http {

// {"requests": [{id, user_request, state, prompt_tokens, output_tokens, computed_tokens, placeholders, blocks,
//  block_tables, n, preemptions, pooling}], "kv_blocks": {total, used, cached, free, states}, "num_splits": N,
//  "pooling": {requests, tokens} (pooling requests that produced their vector, and their prompt tokens),
//  "steps": {async_scheduling, in_flight, worker_news_pending, total, discarded_tokens},
//  "kv_transfer" (PD roles): {peers: [{address, up, in_flight, device_link}], link_transport, links_to_decode,
//  transfers_in_flight, awaiting_prefill, held_for_decode}}
std::string admin_requests_json(const std::vector<EngineView>& engines);
// {"actors": [{name, mailbox_depth, messages_handled}]}; an actor that did not answer: nulls and "busy": true.
std::string admin_actors_json(const std::vector<std::vector<ActorView>>& engines);

}  // namespace parley::http
