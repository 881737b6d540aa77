# `make install PREFIX=...` and the .deb (`make deb`, CPack). Only the binary and its docs
# are installed; there is nothing else to install.
include(GNUInstallDirs)
# The install step (and CPack's, which runs it) installs what is built and does not first
# build every target: `make install` and `make deb` build the agentexec target themselves,
# and a test that packs the test build (dist_package) must not rebuild the test binaries.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
install(TARGETS agentexec RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES README.md docs/CI.md docs/SANDBOX.md docs/CONFIG.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME agentexec)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "agentexec maintainers <agentexec@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Headless runner for AI coding agents in CI")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "git, bash, ca-certificates")
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
