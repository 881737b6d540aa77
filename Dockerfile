# agentexec in a container: the portable binary, git, bash, jq, CA roots, a non-root user.
#   docker build --build-arg AGENTEXEC_COMMIT=$(git rev-parse --short=12 HEAD) -t agentexec .
#   docker run --rm -v "$PWD:/work" -e OPENAI_API_KEY agentexec --json "fix the failing test"
# The sandbox inside a container (docs/CI.md, "In a container"): under Docker's default
# seccomp profile Landlock + seccomp confine commands and the run warns that the mount
# namespace (read-only .git, private /dev/shm) is unavailable; add
# --security-opt seccomp=unconfined (or a profile allowing unshare) for the full sandbox. Exit
# code 3 means the host kernel has no Landlock: run with -s danger-full-access only where the
# container is the boundary.

# --- build: the same `make dist` as a release, on the same Debian as the release build ---
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN ./scripts/install-deps.sh dist
COPY . .
ARG AGENTEXEC_COMMIT=unknown
RUN make dist DIST_CMAKE_ARGS="-DAGENTEXEC_COMMIT=${AGENTEXEC_COMMIT}" \
 && mkdir -p /out \
 && tar -xzf dist/agentexec-*-linux-*.tar.gz -C /out --strip-components=1

# --- runtime ---
FROM debian:12-slim AS runtime
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends git bash jq ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 --shell /bin/bash agent \
 && git config --system --add safe.directory '*'
COPY --from=build /out/agentexec /usr/local/bin/agentexec
COPY scripts/summarize-events.sh /usr/local/share/agentexec/scripts/summarize-events.sh
COPY scripts/ci/run.sh /usr/local/share/agentexec/scripts/ci/run.sh
# The licence and the notices of the libraries the static binary bundles (LGPL: how to relink).
COPY LICENSE /usr/share/doc/agentexec/LICENSE
COPY THIRD_PARTY_NOTICES /usr/share/doc/agentexec/THIRD_PARTY_NOTICES
USER agent
WORKDIR /work
ENTRYPOINT ["agentexec"]
CMD ["--help"]
