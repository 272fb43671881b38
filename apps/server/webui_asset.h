// SPDX-License-Identifier: MIT
// The web UI served at GET /: one self-contained HTML page (apps/server/webui/index.html, with
// its CSS and JS inline and no external resources), embedded into the binary at build time by
// apps/server/embed_webui.cmake. Invariant: the view points at static storage and is never empty.
#pragma once

#include <string_view>

namespace sniper::server {

// Returns the page's bytes (UTF-8 HTML, serve as "text/html; charset=utf-8"). Thread-safe.
std::string_view webui_index_html();

}  // namespace sniper::server
