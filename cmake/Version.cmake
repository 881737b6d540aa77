# The git commit agentexec --version prints. Read at configure time, and configured again by
# the next build whenever HEAD moves (a commit, checkout or pull writes HEAD's reflog), so an
# incremental build never names an older commit; only cli/build_commit.cc is compiled again
# for it (its own library, so no other file's flags change).
# -DAGENTEXEC_COMMIT=... overrides it (a Docker build without .git passes it as a build
# argument). Outside a git checkout it is "unknown" rather than a configure error, so a source
# tarball still builds.
if(NOT AGENTEXEC_COMMIT)
  execute_process(
    COMMAND git -C "${PROJECT_SOURCE_DIR}" rev-parse --short=12 HEAD
    OUTPUT_VARIABLE _ae_commit OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _ae_rc ERROR_QUIET)
  if(_ae_rc EQUAL 0 AND _ae_commit MATCHES "^[0-9a-f]+$")
    set(AGENTEXEC_COMMIT "${_ae_commit}")
    execute_process(
      COMMAND git -C "${PROJECT_SOURCE_DIR}" rev-parse --path-format=absolute --git-path logs/HEAD
      OUTPUT_VARIABLE _ae_reflog OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE _ae_rc ERROR_QUIET)
    if(_ae_rc EQUAL 0 AND EXISTS "${_ae_reflog}")
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_ae_reflog}")
    endif()
  else()
    set(AGENTEXEC_COMMIT "unknown")
  endif()
endif()
message(STATUS "agentexec ${PROJECT_VERSION} (${AGENTEXEC_COMMIT})")
