// Bytes from a connection in, HTTP requests out, in arrival order: the parsing half of a session, with no
// socket, so pipelining and every malformed-request answer are tested byte by byte. A malformed request
// becomes a Refusal that carries the status owed (400, 408, 413, 431, 503, 505); after a refusal, or after a
// websocket upgrade request, reading ends: later bytes are not requests.
#pragma once
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include <deque>
#include <optional>
#include <string>
#include <string_view>

namespace parley::http {

struct Incoming {
  enum class Kind { Request, Refusal };
  Kind kind = Kind::Request;
  boost::beast::http::request<boost::beast::http::string_body> request;  // Kind::Request
  int status = 0;                                                        // Kind::Refusal
  std::string message;                                                   // Kind::Refusal: why, for the error body
};

class RequestReader {
 public:
  struct Limits {
    size_t max_body_bytes = 1 << 20;
    size_t max_header_bytes = 64 * 1024;  // request line and fields together; more gets 431
    size_t max_queued = 16;               // requests read but not yet taken; the next one gets 503
  };
  // Reading: requests are parsed. Refused: a refusal is queued, later bytes are dropped. Upgrade: a
  // websocket upgrade request is queued, later bytes are the websocket's (the caller stops reading).
  enum class State { Reading, Refused, Upgrade };
  explicit RequestReader(Limits limits);

  // Parses as much as is there; what does not complete a request waits for the next feed.
  void feed(std::string_view bytes);
  // Reading ends with this answer (a read timeout's 408, the pipelining limit's 503).
  void refuse(int status, std::string message);

  std::optional<Incoming> pop();
  size_t queued() const { return ready_.size(); }
  bool mid_request() const { return state_ == State::Reading && (buffer_.size() > 0 || parser_->got_some()); }
  State state() const { return state_; }

 private:
  void start_request();
  void refuse_parse_error(boost::beast::error_code ec);
  void request_done();

  Limits limits_;
  boost::beast::flat_buffer buffer_;  // bytes the parser has not consumed yet (a header still arriving)
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::deque<Incoming> ready_;
  State state_ = State::Reading;
};

// The status a parse error is answered with: 413 body too large, 431 header too large, 400 otherwise.
int refusal_status(boost::beast::error_code ec);

}  // namespace parley::http
