#include "http/request_reader.hpp"

#include <cctype>

namespace parley::http {

namespace bhttp = boost::beast::http;

namespace {

// The request line's version field: after the method and the target, up to a space or the line's end. Where a
// read ends inside the line, what has arrived of it is what Beast refused, so the field is the same however the
// bytes were split (the last word of the line is not: "G ET //( HTTP/2.4" has "//(" there).
std::string_view version_field(std::string_view pending) {
  const std::string_view line = pending.substr(0, pending.find_first_of("\r\n"));
  size_t at = line.find(' ');
  if (at != std::string_view::npos) at = line.find(' ', at + 1);
  if (at == std::string_view::npos) return {};
  const std::string_view rest = line.substr(at + 1);
  return rest.substr(0, rest.find(' '));
}

// The version a 505 names ("2.0", "3"), or "" for garbage (400). Beast refuses "HTTP/2.0" as soon as those eight
// characters are in, whatever follows them, and "HTTP/3" only at the field's end, so that is what is read here.
std::string_view other_http_version(std::string_view field) {
  const auto digit = [&](size_t i) { return i < field.size() && std::isdigit(static_cast<unsigned char>(field[i])); };
  if (field.substr(0, 5) != "HTTP/" || !digit(5)) return {};
  if (field.size() > 6 && field[6] == '.' && digit(7)) {
    const std::string_view v = field.substr(5, 3);
    return v == "1.0" || v == "1.1" ? std::string_view() : v;
  }
  return field.size() == 6 ? field.substr(5) : std::string_view();
}

}  // namespace

int refusal_status(boost::beast::error_code ec) {
  if (ec == bhttp::error::body_limit) return 413;
  if (ec == bhttp::error::header_limit) return 431;
  return 400;
}

void RequestReader::refuse_parse_error(boost::beast::error_code ec) {
  const int status = refusal_status(ec);
  if (status == 413)
    return refuse(413, "Request body exceeds the limit of " + std::to_string(limits_.max_body_bytes) + " bytes.");
  if (status == 431)
    return refuse(431,
                  "Request header fields exceed the limit of " + std::to_string(limits_.max_header_bytes) + " bytes.");
  if (ec == bhttp::error::bad_version) {
    const std::string_view pending(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    const std::string_view version = other_http_version(version_field(pending));
    if (!version.empty())
      return refuse(505, "HTTP version " + std::string(version) + " is not supported; use HTTP/1.1.");
  }
  refuse(400, "Malformed HTTP request: " + ec.message() + ".");
}

RequestReader::RequestReader(Limits limits) : limits_(limits) { start_request(); }

void RequestReader::start_request() {
  parser_.emplace();
  parser_->body_limit(limits_.max_body_bytes);
  parser_->header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
  parser_->eager(true);  // a body arriving with its header is parsed in the same call
}

void RequestReader::refuse(int status, std::string message) {
  if (state_ != State::Reading) return;
  Incoming r;
  r.kind = Incoming::Kind::Refusal, r.status = status, r.message = std::move(message);
  ready_.push_back(std::move(r));
  state_ = State::Refused;
  buffer_.clear();
}

void RequestReader::feed(std::string_view bytes) {
  if (state_ != State::Reading) return;
  auto dst = buffer_.prepare(bytes.size());
  boost::asio::buffer_copy(dst, boost::asio::buffer(bytes.data(), bytes.size()));
  buffer_.commit(bytes.size());
  while (state_ == State::Reading && buffer_.size() > 0) {
    boost::beast::error_code ec;
    const size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec == bhttp::error::need_more) break;  // the rest of a header (or chunk line) is still to come
    if (ec) return refuse_parse_error(ec);
    if (parser_->is_done())
      request_done();
    else if (used == 0)
      break;
  }
}

void RequestReader::request_done() {
  if (ready_.size() >= limits_.max_queued)
    return refuse(503, "More than " + std::to_string(limits_.max_queued) +
                           " pipelined requests are waiting on this connection; send the rest after their answers.");
  Incoming r;
  r.request = parser_->release();
  const bool upgrade = boost::beast::websocket::is_upgrade(r.request);
  ready_.push_back(std::move(r));
  if (upgrade) {
    state_ = State::Upgrade;  // what follows is the websocket's
    buffer_.clear();
    return;
  }
  start_request();
}

std::optional<Incoming> RequestReader::pop() {
  if (ready_.empty()) return std::nullopt;
  Incoming r = std::move(ready_.front());
  ready_.pop_front();
  return r;
}

}  // namespace parley::http
