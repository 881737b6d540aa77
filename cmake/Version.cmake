# The git commit agentexec --version prints. Read at configure time (re-run cmake, or
# `make dist`, which always configures, to refresh it); -DAGENTEXEC_COMMIT=... overrides it
# (a Docker build without .git passes it as a build argument). Outside a git checkout it is
# "unknown" rather than a configure error, so a source tarball still builds.
if(NOT AGENTEXEC_COMMIT)
  execute_process(
    COMMAND git -C "${PROJECT_SOURCE_DIR}" rev-parse --short=12 HEAD
    OUTPUT_VARIABLE _ae_commit OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _ae_rc ERROR_QUIET)
  if(_ae_rc EQUAL 0 AND _ae_commit MATCHES "^[0-9a-f]+$")
    set(AGENTEXEC_COMMIT "${_ae_commit}")
  else()
    set(AGENTEXEC_COMMIT "unknown")
  endif()
endif()
message(STATUS "agentexec ${PROJECT_VERSION} (${AGENTEXEC_COMMIT})")
