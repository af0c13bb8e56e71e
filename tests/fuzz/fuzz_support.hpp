// Shared by the fuzz targets: the tok512 vocabulary from ../shared and a serving context over it.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "http/chat_prompt.hpp"
#include "http/openai_protocol.hpp"
#include "model/tokenizer.hpp"

namespace parley::fuzz {

inline const Tokenizer& tok512() {
  static const Tokenizer tok(read_llama2c_tokenizer(std::string(PARLEY_SHARED_DIR) + "/models/tok512.bin", 512));
  return tok;
}

// stories260K's vocabulary and a short context, as tests/openai_test_util.hpp; `chatml` serves a template that
// loops over messages and tools instead of the plain fallback.
inline http::ServingContext serving_context(bool chatml) {
  http::ServingContext ctx{&tok512(), "stories260K", 64, nullptr};
  if (chatml)
    ctx.chat_template = http::make_chat_template(
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
        "{% if tools %}{{ tools | tojson }}{% endif %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
        tok512());
  return ctx;
}

}  // namespace parley::fuzz
