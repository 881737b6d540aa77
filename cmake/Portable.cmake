# AGENTEXEC_PORTABLE=ON: one statically linked agentexec that runs on any Linux >= 5.13 with
# no particular userland (see docs/CI.md, "The portable binary"). Included before the
# find_package() calls so that the targets they would create already exist:
#   fmt::fmt, tomlplusplus::    header-only (cmake/LeanLink.cmake)
#   CURL::libcurl               a minimal static libcurl, static OpenSSL and zlib
#                               (cmake/BundledCurl.cmake)
# libseccomp.a and glibc/libstdc++ come from Debian as they are.
include(${CMAKE_CURRENT_LIST_DIR}/BundledCurl.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/LeanLink.cmake)

# Applied to the agentexec target once it exists (see the top CMakeLists.txt).
function(agentexec_make_portable target)
  # -static: no PT_INTERP, no DT_NEEDED; the binary needs only the kernel. glibc warns that
  # getpwnam & co. need NSS at run time; agentexec resolves no user names (HOME is used),
  # and names are resolved by c-ares, which reads /etc/hosts and /etc/resolv.conf itself.
  target_link_options(${target} PRIVATE -static -Wl,--gc-sections)
  agentexec_static_seccomp()
  target_compile_definitions(${target} PRIVATE AGENTEXEC_PORTABLE=1)
endfunction()
