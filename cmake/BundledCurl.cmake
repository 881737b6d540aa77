# CURL::libcurl as a minimal static libcurl from scripts/build-static-curl.sh (HTTP + OpenSSL +
# c-ares), with Debian's static OpenSSL, zlib and c-ares: for the portable binary
# (cmake/Portable.cmake) and, with AGENTEXEC_BUNDLED_CURL, for the dynamic one, where it
# replaces Debian's libcurl and the 29 shared libraries it loads (GnuTLS, Kerberos, LDAP, SSH,
# RTMP...) at every start. Included before find_package(CURL).
set(AGENTEXEC_STATIC_CURL "${PROJECT_BINARY_DIR}/static-curl" CACHE PATH
    "Prefix of the static libcurl build (made by scripts/build-static-curl.sh if absent)")
if(NOT EXISTS "${AGENTEXEC_STATIC_CURL}/lib/libcurl.a")
  message(STATUS "bundled curl: building a static libcurl into ${AGENTEXEC_STATIC_CURL}")
  # A cross build (cmake/toolchain-*.cmake) builds curl for the target's GNU triplet.
  set(_curl_host "")
  if(CMAKE_CROSSCOMPILING)
    set(_curl_host "${CMAKE_LIBRARY_ARCHITECTURE}")
  endif()
  execute_process(
    COMMAND "${PROJECT_SOURCE_DIR}/scripts/build-static-curl.sh" "${AGENTEXEC_STATIC_CURL}"
            ${_curl_host}
    RESULT_VARIABLE _curl_rc)
  if(NOT _curl_rc EQUAL 0)
    message(FATAL_ERROR "bundled curl: scripts/build-static-curl.sh failed (${_curl_rc})")
  endif()
endif()

find_library(AE_LIBSSL_A NAMES libssl.a REQUIRED)
find_library(AE_LIBCRYPTO_A NAMES libcrypto.a REQUIRED)
find_library(AE_LIBZ_A NAMES libz.a REQUIRED)
find_library(AE_LIBCARES_A NAMES libcares.a REQUIRED)

add_library(CURL::libcurl STATIC IMPORTED)
set_target_properties(CURL::libcurl PROPERTIES
  IMPORTED_LOCATION "${AGENTEXEC_STATIC_CURL}/lib/libcurl.a"
  INTERFACE_INCLUDE_DIRECTORIES "${AGENTEXEC_STATIC_CURL}/include"
  INTERFACE_COMPILE_DEFINITIONS CURL_STATICLIB
  INTERFACE_LINK_LIBRARIES
    "${AE_LIBCARES_A};${AE_LIBSSL_A};${AE_LIBCRYPTO_A};${AE_LIBZ_A};Threads::Threads")
