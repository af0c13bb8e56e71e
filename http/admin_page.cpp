#include "http/admin_page.hpp"

#include <openssl/evp.h>
#include <openssl/sha.h>

namespace parley::http {

const char* admin_console_html();  // generated from http/admin_page/console.html

namespace {

// 'sha256-<base64>' of the text between the first `<tag>` and `</tag>`: CSP's hash source for inline code.
std::string inline_hash(const std::string& html, const std::string& tag) {
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  const size_t begin = html.find(open) + open.size();
  const std::string body = html.substr(begin, html.find(close, begin) - begin);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(body.data()), body.size(), digest);
  unsigned char b64[4 * ((SHA256_DIGEST_LENGTH + 2) / 3) + 1];
  EVP_EncodeBlock(b64, digest, SHA256_DIGEST_LENGTH);
  return "'sha256-" + std::string(reinterpret_cast<char*>(b64)) + "'";
}

}  // namespace

const std::string& admin_page_html() {
  static const std::string html = admin_console_html();
  return html;
}

const std::string& admin_page_csp() {
  static const std::string csp = "default-src 'none'; script-src " + inline_hash(admin_page_html(), "script") +
                                 "; style-src " + inline_hash(admin_page_html(), "style") +
                                 "; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; "
                                 "frame-ancestors 'none'";
  return csp;
}

}  // namespace parley::http
