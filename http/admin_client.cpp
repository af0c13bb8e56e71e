#include "http/admin_client.hpp"

#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include <stdexcept>

namespace parley::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;

beast::tcp_stream connect(net::io_context& ioc, const std::string& host, const std::string& port,
                          std::chrono::milliseconds timeout) {
  net::ip::tcp::resolver resolver(ioc);
  beast::tcp_stream stream(ioc);
  stream.expires_after(timeout);
  stream.connect(resolver.resolve(host, port));
  return stream;
}

}  // namespace

AdminClient::AdminClient(const std::string& url, std::string token) : token_(std::move(token)) {
  std::string rest = url;
  if (rest.rfind("http://", 0) != 0) throw std::invalid_argument("--url must be http://HOST:PORT, got " + url);
  rest = rest.substr(7);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  const size_t colon = rest.rfind(':');
  host_ = colon == std::string::npos ? rest : rest.substr(0, colon);
  port_ = colon == std::string::npos ? "80" : rest.substr(colon + 1);
  if (host_.empty() || rest.find('/') != std::string::npos)
    throw std::invalid_argument("--url must be http://HOST:PORT, got " + url);
}

AdminReply AdminClient::call(const std::string& method, const std::string& path, const std::string& body,
                             std::chrono::milliseconds timeout) const {
  AdminReply out;
  try {
    net::io_context ioc;
    beast::tcp_stream stream = connect(ioc, host_, port_, timeout);
    bhttp::request<bhttp::string_body> req(bhttp::string_to_verb(method), path, 11);
    req.set(bhttp::field::host, host_ + ":" + port_);
    req.set(bhttp::field::authorization, "Bearer " + token_);
    req.set(bhttp::field::content_type, "application/json");
    req.keep_alive(false);
    req.body() = body;
    req.prepare_payload();
    bhttp::write(stream, req);
    beast::flat_buffer buffer;
    bhttp::response<bhttp::string_body> res;
    bhttp::read(stream, buffer, res);
    out.status = int(res.result_int());
    out.body = res.body();
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

AdminReply AdminClient::snapshot(std::chrono::milliseconds timeout) const {
  AdminReply out;
  try {
    net::io_context ioc;
    beast::tcp_stream stream = connect(ioc, host_, port_, timeout);
    bhttp::request<bhttp::empty_body> req(bhttp::verb::get, "/admin/events", 11);
    req.set(bhttp::field::host, host_ + ":" + port_);
    req.set(bhttp::field::authorization, "Bearer " + token_);
    bhttp::write(stream, req);
    beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(64u << 20);
    bhttp::read_header(stream, buffer, parser);
    out.status = int(parser.get().result_int());
    // Each event is one chunk "data: {...}\n\n"; the first with "age_ms":-1 has no engine answer yet.
    if (out.status != 200) {
      bhttp::read(stream, buffer, parser);
      out.body = parser.get().body();
      return out;
    }
    std::string seen = beast::buffers_to_string(buffer.data());  // what came with the header
    for (bool first = true;; first = false) {
      if (!first) {
        char chunk[65536];
        const size_t n = stream.read_some(net::buffer(chunk));
        seen.append(chunk, n);
      }
      for (size_t at = seen.find("data: "); at != std::string::npos; at = seen.find("data: ", at + 6)) {
        const size_t end = seen.find("\n\n", at);
        if (end == std::string::npos) break;
        std::string event = seen.substr(at + 6, end - at - 6);
        if (event.rfind("{\"age_ms\":-1", 0) == 0) continue;
        out.body = std::move(event);
        return out;
      }
    }
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

}  // namespace parley::http
