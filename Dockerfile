# agentexec in a container. Build: docker build -t agentexec .
# Run:   docker run --rm -v "$PWD:/work" -w /work -e OPENAI_API_KEY agentexec --json "..."
#
# Landlock and seccomp work inside containers when the host kernel has Landlock (5.13+)
# and the container's seccomp profile allows the landlock_* system calls (Docker's default
# profile does since 20.10.x). Where they cannot be enforced agentexec exits 3 and says so;
# if the container itself is your boundary, pass -s danger-full-access.
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN ./scripts/install-deps.sh
COPY . .
RUN make BUILD=/build

FROM debian:12-slim
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
      libcurl4 libfmt9 libseccomp2 libtomlplusplus3 ca-certificates git bash \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/agentexec /usr/local/bin/agentexec
ENTRYPOINT ["agentexec"]
