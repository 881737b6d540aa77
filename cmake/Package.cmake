# `make install PREFIX=...` and the .deb (`make deb`, CPack). Only the binary, its manual
# page and its docs are installed; there is nothing else to install.
include(GNUInstallDirs)
# The install step (and CPack's, which runs it) installs what is built and does not first
# build every target: `make install` and `make deb` build the agentexec target themselves,
# and a test that packs the test build (dist_package) must not rebuild the test binaries.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
install(TARGETS agentexec RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES README.md docs/CI.md docs/SANDBOX.md docs/CONFIG.md LICENSE THIRD_PARTY_NOTICES
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

# Debian's policy files for the .deb: the machine-readable copyright (agentexec's licence and
# every library the static binary bundles) and a changelog.gz (gzip -9n: no name or time
# inside, so the same tree packs to the same bytes).
set(AE_DEB_CHANGELOG "${PROJECT_BINARY_DIR}/debian/changelog")
string(TIMESTAMP AE_DEB_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(WRITE "${AE_DEB_CHANGELOG}"
     "agentexec (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
     "  * agentexec ${PROJECT_VERSION}: see /usr/share/doc/agentexec/README.md.\n\n"
     " -- agentexec maintainers <agentexec@users.noreply.github.com>  ${AE_DEB_DATE}\n")
execute_process(COMMAND gzip -9nc "${AE_DEB_CHANGELOG}"
                OUTPUT_FILE "${PROJECT_BINARY_DIR}/debian/changelog.gz")
install(FILES "${PROJECT_BINARY_DIR}/debian/changelog.gz" cmake/debian/copyright
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# agentexec(1): docs/agentexec.1, made from --help by scripts/gen-manpage.py (dist_manpage
# checks it against the binary), compressed the same way; a change to it reconfigures.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS docs/agentexec.1)
file(MAKE_DIRECTORY "${PROJECT_BINARY_DIR}/man")
execute_process(COMMAND gzip -9nc "${PROJECT_SOURCE_DIR}/docs/agentexec.1"
                OUTPUT_FILE "${PROJECT_BINARY_DIR}/man/agentexec.1.gz")
install(FILES "${PROJECT_BINARY_DIR}/man/agentexec.1.gz" DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
if(AGENTEXEC_PORTABLE)
  install(FILES cmake/debian/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
          RENAME agentexec)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME agentexec)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "agentexec maintainers <agentexec@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Headless runner for AI coding agents in CI")
# The extended description (CPack puts the summary above it as the first line).
string(JOIN "\n" CPACK_DEBIAN_PACKAGE_DESCRIPTION
     "agentexec runs an AI coding agent on one task without a terminal and exits"
     "with a code that says how it went (a drop-in for codex exec). The commands"
     "the model runs are confined by a Linux sandbox: a mount namespace, Landlock"
     "and seccomp. Events are written as JSON lines for CI pipelines.")
# The binary is stripped in the package (as in the tarball), its symbols left to the build.
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# bash is Essential in Debian: naming it is a lintian error.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "git, ca-certificates")
if(AGENTEXEC_PORTABLE)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "")  # statically linked: any Debian/Ubuntu release
else()
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # dpkg-shlibdeps computes the library packages
endif()
# CPack asks dpkg for the architecture, which is the build host's; a cross build names the
# target's (Debian's name for aarch64 is arm64).
if(CMAKE_CROSSCOMPILING AND CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
endif()
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/package)
include(CPack)
