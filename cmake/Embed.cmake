# ae_embed_text(OUTPUT HEADER FUNCTION INPUT): writes OUTPUT, a source file defining
# `std::string_view ae::FUNCTION()` (declared in HEADER) that returns INPUT's exact text, so
# the binary carries a file of the repository unchanged. Editing INPUT configures again.
function(ae_embed_text output header function input)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${input})
  file(READ ${input} AE_EMBED_TEXT)
  file(RELATIVE_PATH AE_EMBED_FROM ${PROJECT_SOURCE_DIR} ${input})
  set(AE_EMBED_HEADER ${header})
  set(AE_EMBED_FUNCTION ${function})
  file(CONFIGURE OUTPUT ${output} @ONLY CONTENT
"// Generated from @AE_EMBED_FROM@ by cmake/Embed.cmake; do not edit.
#include \"@AE_EMBED_HEADER@\"

namespace ae {

std::string_view @AE_EMBED_FUNCTION@() {
  return R\"AEEMBED(@AE_EMBED_TEXT@)AEEMBED\";
}

}  // namespace ae
")
endfunction()
