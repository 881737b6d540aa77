# `make install PREFIX=...` and the .deb (`make deb`, CPack). Only the binary and its docs
# are installed; there is nothing else to install.
include(GNUInstallDirs)
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
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/package)
include(CPack)
