# agentexec in a container: the portable binary, git, bash, jq, CA roots, and an entrypoint
# (scripts/docker-entrypoint.sh) that runs as the workspace's owner with a usable HOME,
# defaults to -s workspace-write and says in one line how strong the sandbox is here.
#   docker build --build-arg AGENTEXEC_COMMIT=$(git rev-parse --short=12 HEAD) -t agentexec .
#   docker run --rm -v "$PWD:/work" -e OPENAI_API_KEY agentexec --json "fix the failing test"
# The sandbox inside a container (docs/CI.md, "In a container"): Docker's default seccomp
# profile leaves Landlock + seccomp; --security-opt seccomp=unconfined adds the mount
# namespace, and --security-opt systempaths=unconfined as well the PID namespace (the full
# sandbox). Exit code 3 means the host kernel has no Landlock: run with -s danger-full-access
# only where the container is the boundary.
# Build arguments: BUILD_TAG and BASE_TAG are the Debian tags of the two stages' bases (a test
# builds both from a local debian:12); AGENTEXEC_TARBALL, a `make dist` tarball inside the build context,
# is shipped instead of compiling one here (tests/engines/docker.sh: the host built it).
ARG BUILD_TAG=12
ARG BASE_TAG=12-slim

# --- build: the same `make dist` as a release, on the same Debian as the release build ---
FROM debian:${BUILD_TAG} AS build
WORKDIR /src
ARG AGENTEXEC_TARBALL=
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN [ -n "$AGENTEXEC_TARBALL" ] || ./scripts/install-deps.sh dist
COPY . .
ARG AGENTEXEC_COMMIT=unknown
RUN tarball="$AGENTEXEC_TARBALL" \
 && if [ -z "$tarball" ]; then \
      make dist DIST_CMAKE_ARGS="-DAGENTEXEC_COMMIT=${AGENTEXEC_COMMIT}" \
      && tarball=$(ls dist/agentexec-*-linux-*.tar.gz); \
    fi \
 && mkdir -p /out \
 && tar -xzf "$tarball" -C /out --strip-components=1

# --- runtime ---
FROM debian:${BASE_TAG} AS runtime
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends git bash jq ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 --shell /bin/bash agent \
 && git config --system --add safe.directory '*'
COPY --from=build /out/agentexec /usr/local/bin/agentexec
COPY scripts/summarize-events.sh /usr/local/share/agentexec/scripts/summarize-events.sh
COPY scripts/ci/run.sh /usr/local/share/agentexec/scripts/ci/run.sh
COPY scripts/ci/artefacts.gitignore /usr/local/share/agentexec/scripts/ci/artefacts.gitignore
COPY scripts/docker-entrypoint.sh /usr/local/share/agentexec/scripts/docker-entrypoint.sh
# The licence and the notices of the libraries the static binary bundles (LGPL: how to relink).
COPY LICENSE /usr/share/doc/agentexec/LICENSE
COPY THIRD_PARTY_NOTICES /usr/share/doc/agentexec/THIRD_PARTY_NOTICES
# No USER: the entrypoint starts as root only to become the workspace's owner (setpriv, from
# util-linux, which every Debian image has). GitLab's Docker executor, which replaces the
# entrypoint, runs jobs as root in a root-owned checkout. The user `agent` (uid 10001) is for
# runtimes told to run as that uid (ci-examples/kubernetes: runAsUser: 10001): it has a HOME.
WORKDIR /work
ENTRYPOINT ["/usr/local/share/agentexec/scripts/docker-entrypoint.sh"]
CMD ["--help"]
