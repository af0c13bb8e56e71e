// Special-token splitting, SentencePiece-style BPE (llama2.c run.c semantics), the byte-level BPE
// hand-off, and the llama2.c tokenizer.bin reader.
#include "model/tokenizer.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <queue>
#include <stdexcept>

namespace parley {

namespace {

// run.c's merge loop starts best_score at -1e10, so merges scored at or below it never happen.
constexpr float kMinMergeScore = -1e10f;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Parses "<0xAB>"; -1 when the piece is not a byte piece.
int parse_byte_piece(const std::string& piece) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return -1;
  int hi = hex_value(piece[3]), lo = hex_value(piece[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// Tokens that plain text may turn into; control, unknown, unused and byte pieces are never
// matched from text (SentencePiece), which for llama2.c vocabs changes nothing.
bool text_matchable(TokenType t) {
  return t == TokenType::Normal || t == TokenType::UserDefined || t == TokenType::Undefined;
}

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

template <typename T>
void read_exact(std::ifstream& in, T* dst, std::size_t n, const std::string& path, const std::string& what) {
  in.read(reinterpret_cast<char*>(dst), static_cast<std::streamsize>(n));
  if (!in || static_cast<std::size_t>(in.gcount()) != n)
    throw std::runtime_error("tokenizer file '" + path + "' is truncated: cannot read " + what);
}

}  // namespace

Vocab read_llama2c_tokenizer(const std::string& path, int vocab_size) {
  if (vocab_size <= 0)
    throw std::runtime_error("tokenizer file '" + path + "': vocab_size must be positive, got " +
                             std::to_string(vocab_size));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open tokenizer file '" + path + "'");

  int32_t max_token_length = 0;
  read_exact(in, &max_token_length, sizeof max_token_length, path, "max_token_length");
  if (max_token_length <= 0)
    throw std::runtime_error("tokenizer file '" + path + "': bad max_token_length " + std::to_string(max_token_length));

  Vocab v;
  v.kind = TokenizerKind::SentencePiece;
  v.pieces.resize(vocab_size);
  v.scores.resize(vocab_size);
  v.types.resize(vocab_size, TokenType::Normal);
  for (int i = 0; i < vocab_size; ++i) {
    const std::string tok = "token " + std::to_string(i) + " of " + std::to_string(vocab_size);
    read_exact(in, &v.scores[i], sizeof(float), path, "the score of " + tok);
    int32_t len = 0;
    read_exact(in, &len, sizeof len, path, "the length of " + tok);
    // Guards against reading garbage as a huge allocation; real pieces are short.
    if (len < 0 || len > (1 << 16))
      throw std::runtime_error("tokenizer file '" + path + "': bad length " + std::to_string(len) + " for " + tok);
    v.pieces[i].resize(static_cast<std::size_t>(len));
    if (len > 0) read_exact(in, v.pieces[i].data(), static_cast<std::size_t>(len), path, tok);
  }

  for (int i = 0; i < vocab_size; ++i) {
    std::string& p = v.pieces[i];
    if (p == "<unk>") {
      v.types[i] = TokenType::Unknown;
      v.unk_id = i;
    } else if (p == "\n<s>\n") {
      p = "<s>";
      v.types[i] = TokenType::Control;
      v.bos_id = i;
    } else if (p == "\n</s>\n") {
      p = "</s>";
      v.types[i] = TokenType::Control;
      v.eos_id = i;
    } else if (parse_byte_piece(p) >= 0) {
      v.types[i] = TokenType::Byte;
    }
  }
  return v;
}

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)), specials_(vocab_) {
  const int n = vocab_.size();
  if (n == 0) throw std::invalid_argument("tokenizer vocab is empty");
  if (static_cast<int>(vocab_.scores.size()) != n || static_cast<int>(vocab_.types.size()) != n)
    throw std::invalid_argument("tokenizer vocab: " + std::to_string(n) + " pieces but " +
                                std::to_string(vocab_.scores.size()) + " scores and " +
                                std::to_string(vocab_.types.size()) + " types");
  auto check_id = [n](int id, const char* what) {
    if (id < -1 || id >= n)
      throw std::invalid_argument(std::string("tokenizer vocab: ") + what + " id " + std::to_string(id) +
                                  " is outside [0, " + std::to_string(n) + ")");
  };
  check_id(vocab_.bos_id, "bos");
  check_id(vocab_.eos_id, "eos");
  check_id(vocab_.unk_id, "unk");
  check_id(vocab_.eot_id, "eot");
  check_id(vocab_.eom_id, "eom");
  check_id(vocab_.sep_id, "sep");
  if (vocab_.kind == TokenizerKind::Gpt2Bpe) bpe_ = std::make_unique<const ByteLevelBpe>(vocab_);
  if (vocab_.kind == TokenizerKind::WordPiece) wordpiece_ = std::make_unique<const WordPiece>(vocab_);
  eog_ids_ = end_of_generation_ids(vocab_);

  byte_to_id_.fill(-1);
  bytes_.resize(n);
  piece_to_id_.reserve(static_cast<std::size_t>(n));
  for (int id = 0; id < n; ++id) {
    const std::string& piece = vocab_.pieces[id];
    switch (vocab_.types[id]) {
      case TokenType::Byte: {
        const int b = parse_byte_piece(piece);
        if (b < 0)
          throw std::invalid_argument("tokenizer vocab: byte token " + std::to_string(id) + " has piece '" + piece +
                                      "', expected <0xAB>");
        bytes_[id] = std::string(1, static_cast<char>(b));
        if (byte_to_id_[b] < 0) byte_to_id_[b] = id;
        break;
      }
      case TokenType::Control:
      case TokenType::Unused:
        break;  // decode to nothing (a control token's text only when asked)
      case TokenType::Unknown:
        bytes_[id] = "\xEF\xBF\xBD";  // U+FFFD: the text it stood for is lost
        break;
      default:
        // A byte-level piece spells its bytes, a WordPiece one its text; an added (user-defined) token is its own text.
        if (vocab_.types[id] == TokenType::UserDefined)
          bytes_[id] = piece;
        else
          bytes_[id] = bpe_ ? ByteLevelBpe::piece_bytes(piece) : wordpiece_ ? WordPiece::piece_text(piece) : piece;
        // First id wins for duplicate pieces.
        if (text_matchable(vocab_.types[id])) piece_to_id_.try_emplace(piece, id);
    }
  }
}

std::vector<int> Tokenizer::encode(std::string_view text, bool add_special) const {
  std::vector<int> out;
  if (add_special && vocab_.add_bos && vocab_.bos_id >= 0) out.push_back(vocab_.bos_id);
  bool after_special = true;  // llama.cpp's is_prev_special: the text start counts as one
  for (const TextSegment& segment : specials_.split(text)) {
    if (segment.token >= 0) {
      out.push_back(segment.token);
      after_special = true;
      continue;
    }
    if (wordpiece_) {
      wordpiece_->encode(segment.text, out);
    } else if (bpe_) {
      // Hugging Face's ByteLevel(add_prefix_space): a space before each run that does not start with one.
      const bool prefix = vocab_.add_space_prefix && segment.text.front() != ' ';
      if (prefix)
        bpe_->encode(" " + std::string(segment.text), out);
      else
        bpe_->encode(segment.text, out);
    } else {
      std::vector<int> body = encode_spm(segment.text, vocab_.add_space_prefix && after_special);
      out.insert(out.end(), body.begin(), body.end());
    }
    after_special = false;
  }
  if (add_special && vocab_.add_eos && vocab_.eos_id >= 0) out.push_back(vocab_.eos_id);
  if (add_special && vocab_.add_sep && vocab_.sep_id >= 0) out.push_back(vocab_.sep_id);
  return out;
}

bool Tokenizer::is_end_of_generation(int token) const {
  return std::binary_search(eog_ids_.begin(), eog_ids_.end(), token);
}

int Tokenizer::lookup(std::string_view piece) const {
  auto it = piece_to_id_.find(std::string(piece));
  return it == piece_to_id_.end() ? -1 : it->second;
}

// Symbols form a linked list in text order; index order is position order (used for ties).
struct Tokenizer::SpmSymbol {
  int id;
  int prev, next;
  bool mergeable;  // byte-fallback and unk symbols never merge
};

std::vector<int> Tokenizer::encode_spm(std::string_view text, bool space_prefix) const {
  if (text.empty()) return {};
  std::vector<SpmSymbol> syms = spm_symbols(text, space_prefix);
  if (syms.empty()) return {};
  merge_spm(syms);
  std::vector<int> out;
  for (int i = 0; i >= 0; i = syms[i].next) out.push_back(syms[i].id);
  return out;
}

// One symbol per character (its piece, else its bytes' tokens, else unk), as run.c splits the text.
std::vector<Tokenizer::SpmSymbol> Tokenizer::spm_symbols(std::string_view text, bool space_prefix) const {
  std::vector<SpmSymbol> syms;
  syms.reserve(text.size());
  auto add = [&syms](int id, bool mergeable) {
    const int i = static_cast<int>(syms.size());
    syms.push_back({id, i - 1, i + 1, mergeable});
  };
  auto add_char = [&](std::string_view ch) {
    if (const int id = lookup(ch); id >= 0) {
      add(id, true);
      return;
    }
    bool all_bytes = true;
    for (char c : ch) all_bytes = all_bytes && byte_to_id_[static_cast<unsigned char>(c)] >= 0;
    if (all_bytes) {
      for (char c : ch) add(byte_to_id_[static_cast<unsigned char>(c)], false);
    } else if (vocab_.unk_id >= 0) {
      add(vocab_.unk_id, false);  // no byte fallback in this vocab: one unk per character
    }                             // else: the character cannot be represented and is dropped
  };
  // The dummy prefix is its own unit (run.c looks up " " alone), so leading continuation bytes
  // of the text never group with it; a vocab without " " gets its byte token.
  if (space_prefix) add_char(" ");
  // run.c groups a byte with up to 3 following continuation bytes, whatever the lead byte says.
  for (std::size_t i = 0; i < text.size();) {
    std::size_t len = 1;
    while (len < 4 && i + len < text.size() && is_continuation(static_cast<unsigned char>(text[i + len]))) ++len;
    add_char(text.substr(i, len));
    i += len;
  }
  if (!syms.empty()) syms.back().next = -1;
  return syms;
}

// Merges the best-scoring adjacent pair until none is in the vocabulary, as run.c does, with a priority queue.
void Tokenizer::merge_spm(std::vector<SpmSymbol>& syms) const {
  // A candidate merge of syms[left] with its right neighbour; stale once either side changed.
  struct Candidate {
    float score;
    int left, right;
    int left_id, right_id, merged_id;
  };
  // Highest score first; on ties the leftmost pair, as run.c's strictly-greater scan picks.
  auto worse = [](const Candidate& a, const Candidate& b) {
    return a.score != b.score ? a.score < b.score : a.left > b.left;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)> queue(worse);
  std::string joined;
  auto consider = [&](int left) {
    if (left < 0) return;
    const int right = syms[left].next;
    if (right < 0 || !syms[left].mergeable || !syms[right].mergeable) return;
    joined = vocab_.pieces[syms[left].id];
    joined += vocab_.pieces[syms[right].id];
    const int id = lookup(joined);
    if (id < 0) return;
    const float score = vocab_.scores[id];
    if (!(score > kMinMergeScore)) return;  // also rejects NaN, which would break the ordering
    queue.push({score, left, right, syms[left].id, syms[right].id, id});
  };
  for (int i = 0; i + 1 < static_cast<int>(syms.size()); ++i) consider(i);

  std::vector<bool> dead(syms.size(), false);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    SpmSymbol& l = syms[c.left];
    if (dead[c.left] || dead[c.right] || l.next != c.right || l.id != c.left_id || syms[c.right].id != c.right_id)
      continue;
    l.id = c.merged_id;
    dead[c.right] = true;
    l.next = syms[c.right].next;
    if (l.next >= 0) syms[l.next].prev = c.left;
    consider(l.prev);
    consider(c.left);
  }
}

std::string Tokenizer::token_bytes(int prev_token, int token, bool special_text) const {
  if (token < 0 || token >= vocab_.size())
    throw std::out_of_range("token id " + std::to_string(token) + " is outside the vocab of " +
                            std::to_string(vocab_.size()));
  if (special_text && vocab_.types[token] == TokenType::Control) return vocab_.pieces[token];
  const std::string& b = bytes_[token];
  // SentencePiece drops the dummy-prefix space after BOS; run.c checks the piece text, so a
  // <0x20> byte token keeps its space.
  if (vocab_.kind == TokenizerKind::SentencePiece && prev_token == vocab_.bos_id && prev_token >= 0 &&
      vocab_.types[token] != TokenType::Byte && !b.empty() && b[0] == ' ')
    return b.substr(1);
  return b;
}

std::string Tokenizer::decode(const std::vector<int>& tokens, int prev_token, bool special_text) const {
  std::string out;
  for (int t : tokens) {
    out += token_bytes(prev_token, t, special_text);
    prev_token = t;
  }
  return out;
}

}  // namespace parley
