# llhttp::llhttp, the HTTP/1.x parser of Node.js (net/http_head.cc): the system library where
# one is installed (libllhttp-dev, Debian 13 and later), else the generated C sources Debian 12
# ships in node-llhttp (/usr/share/llhttp), compiled here as a static library.
find_path(AE_LLHTTP_INCLUDE llhttp.h PATHS /usr/include /usr/share/include/llhttp NO_DEFAULT_PATH)
find_library(AE_LLHTTP_LIB NAMES llhttp)
if(AE_LLHTTP_LIB AND EXISTS /usr/include/llhttp.h AND NOT AGENTEXEC_PORTABLE)
  add_library(llhttp::llhttp UNKNOWN IMPORTED)
  set_target_properties(llhttp::llhttp PROPERTIES IMPORTED_LOCATION "${AE_LLHTTP_LIB}"
                                                  INTERFACE_INCLUDE_DIRECTORIES /usr/include)
elseif(EXISTS /usr/share/llhttp/llhttp.c AND EXISTS /usr/share/include/llhttp/llhttp.h)
  # The C compiler of the same family as the C++ one, so the sanitizer and fuzzer flags of
  # the build apply to it too (clang++ -> clang, g++ -> gcc, c++ -> cc, cross prefixes kept).
  if(NOT CMAKE_C_COMPILER)
    set(ae_c_compiler "${CMAKE_CXX_COMPILER}")
    if(ae_c_compiler MATCHES "clang\\+\\+")
      string(REPLACE "clang++" "clang" ae_c_compiler "${ae_c_compiler}")
    elseif(ae_c_compiler MATCHES "g\\+\\+")
      string(REGEX REPLACE "g\\+\\+([^/]*)$" "gcc\\1" ae_c_compiler "${ae_c_compiler}")
    elseif(ae_c_compiler MATCHES "c\\+\\+$")
      string(REGEX REPLACE "c\\+\\+$" "cc" ae_c_compiler "${ae_c_compiler}")
    endif()
    set(CMAKE_C_COMPILER "${ae_c_compiler}" CACHE FILEPATH "C compiler (llhttp)")
  endif()
  enable_language(C)
  add_library(ae_llhttp STATIC /usr/share/llhttp/llhttp.c /usr/share/llhttp/api.c
                               /usr/share/llhttp/http.c)
  target_include_directories(ae_llhttp SYSTEM PUBLIC /usr/share/include/llhttp)
  # Generated code: our warning flags are not its concern.
  target_compile_options(ae_llhttp PRIVATE -w)
  set_target_properties(ae_llhttp PROPERTIES POSITION_INDEPENDENT_CODE ON)
  add_library(llhttp::llhttp ALIAS ae_llhttp)
else()
  message(FATAL_ERROR "llhttp not found: install node-llhttp (Debian 12) or libllhttp-dev "
                      "(scripts/install-deps.sh build)")
endif()
