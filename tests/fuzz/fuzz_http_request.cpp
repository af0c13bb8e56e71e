// HTTP/1.1 request bytes into RequestReader: the first byte sets the piece size the rest is fed in. Fed in
// pieces or at once, the reader must make the same requests and refusals of the bytes (the session's reads split
// them anywhere), and a refusal carries one of the statuses the reader owes. Two differences are Beast's: given a
// start line at once it may refuse it before the header ends, where pieces wait for the end of the header; and
// pieces may meet the header limit (431) while Beast looks for the header's "\r\n\r\n", where whole it parses the
// fields within the limit first (a garbled one is 400, one ended otherwise a request, perhaps awaiting its body).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "http/request_reader.hpp"

using parley::http::Incoming;
using parley::http::RequestReader;

namespace {

struct Outcome {
  std::vector<std::string> requests;  // "METHOD target body" or "refused N", in order
  bool mid_request = false;           // bytes of an unfinished request wait for more
};

Outcome read_all(std::string_view bytes, size_t piece) {
  RequestReader reader(RequestReader::Limits{4096, 1024, 4});  // small limits, so 413, 431 and 503 are reachable
  for (size_t at = 0; at < bytes.size(); at += piece) reader.feed(bytes.substr(at, piece));
  std::vector<std::string> out;
  while (auto in = reader.pop()) {
    if (in->kind == Incoming::Kind::Refusal) {
      const int s = in->status;
      if (s != 400 && s != 413 && s != 431 && s != 503 && s != 505) __builtin_trap();
      out.push_back("refused " + std::to_string(s));
    } else {
      out.push_back(std::string(in->request.method_string()) + " " + std::string(in->request.target()) + " " +
                    in->request.body());
    }
  }
  return {out, reader.mid_request()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t piece = 1 + data[0] % 16;
  const Outcome pieces = read_all(bytes, piece), whole = read_all(bytes, bytes.size() + 1);
  if (pieces.requests == whole.requests) return 0;
  if (!pieces.requests.empty() && pieces.requests.back() == "refused 431" &&
      whole.requests.size() + 1 >= pieces.requests.size() &&
      std::equal(pieces.requests.begin(), pieces.requests.end() - 1, whole.requests.begin()))
    return 0;
  const bool refused_early = pieces.mid_request && whole.requests.size() == pieces.requests.size() + 1 &&
                             std::equal(pieces.requests.begin(), pieces.requests.end(), whole.requests.begin()) &&
                             whole.requests.back().starts_with("refused");
  if (!refused_early) __builtin_trap();
  return 0;
}
