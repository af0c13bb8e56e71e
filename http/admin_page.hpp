// The admin console page: one HTML file with its style and script inline, compiled into the binary
// (http/admin_page/console.html, embedded at build time), and the Content-Security-Policy that lets exactly
// that script and style run (their SHA-256 hashes), talk only to this server and never be framed.
#pragma once
#include <string>

namespace parley::http {

const std::string& admin_page_html();
const std::string& admin_page_csp();

}  // namespace parley::http
