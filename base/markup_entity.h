// The characters HTML (and so Markdown's raw HTML) and XML both reserve, as their entities:
// every writer that makes untrusted text inert in markup escapes these the same way.
#pragma once

namespace ae {

// The entity for `c`, or nullptr when `c` needs none.
inline const char* MarkupEntity(char c) {
  switch (c) {
    case '&':
      return "&amp;";
    case '<':
      return "&lt;";
    case '>':
      return "&gt;";
    default:
      return nullptr;
  }
}

}  // namespace ae
