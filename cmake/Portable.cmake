# AGENTEXEC_PORTABLE=ON: one statically linked agentexec that runs on any Linux >= 5.13 with
# no particular userland (see docs/CI.md, "The portable binary"). Included before the
# find_package() calls so that the targets they would create already exist:
#   fmt::fmt                    header-only (Debian ships no libfmt.a)
#   tomlplusplus::tomlplusplus  header-only (Debian ships no libtomlplusplus.a)
#   CURL::libcurl               a minimal static libcurl from scripts/build-static-curl.sh
#                               (HTTP + OpenSSL + c-ares), with static OpenSSL and zlib
# libseccomp.a and glibc/libstdc++ come from Debian as they are.
set(AGENTEXEC_STATIC_CURL "${PROJECT_BINARY_DIR}/static-curl" CACHE PATH
    "Prefix of the static libcurl build (made by scripts/build-static-curl.sh if absent)")
if(NOT EXISTS "${AGENTEXEC_STATIC_CURL}/lib/libcurl.a")
  message(STATUS "portable: building a static libcurl into ${AGENTEXEC_STATIC_CURL}")
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
    message(FATAL_ERROR "portable: scripts/build-static-curl.sh failed (${_curl_rc})")
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

add_library(fmt::fmt INTERFACE IMPORTED)
set_target_properties(fmt::fmt PROPERTIES INTERFACE_COMPILE_DEFINITIONS FMT_HEADER_ONLY=1)

add_library(tomlplusplus::tomlplusplus INTERFACE IMPORTED)
set_target_properties(tomlplusplus::tomlplusplus PROPERTIES
  INTERFACE_COMPILE_DEFINITIONS TOML_HEADER_ONLY=1)

# Applied to the agentexec target once it exists (see the top CMakeLists.txt).
function(agentexec_make_portable target)
  # -static: no PT_INTERP, no DT_NEEDED; the binary needs only the kernel. glibc warns that
  # getpwnam & co. need NSS at run time; agentexec resolves no user names (HOME is used),
  # and names are resolved by c-ares, which reads /etc/hosts and /etc/resolv.conf itself.
  target_link_options(${target} PRIVATE -static -Wl,--gc-sections)
  # pkg-config's libseccomp target names the .so; the static archive replaces it.
  find_library(AE_LIBSECCOMP_A NAMES libseccomp.a REQUIRED)
  set_target_properties(PkgConfig::SECCOMP PROPERTIES INTERFACE_LINK_LIBRARIES "${AE_LIBSECCOMP_A}")
  target_compile_definitions(${target} PRIVATE AGENTEXEC_PORTABLE=1)
endfunction()
