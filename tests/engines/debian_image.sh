# Sourced by the engine scripts that need a bare Debian 12 image: debian:12 as Debian's own
# mirror has it (debootstrap --variant=minbase), imported into the local Docker daemon when
# absent, so nothing is pulled from an image registry.
#   debian12_image LOGDIR   returns 0 with the image present; otherwise sets debian12_missing
#                           to the reason and returns 1.
debian12_image() {
  local log=$1
  debian12_missing=""
  mkdir -p "$log"
  if ! command -v docker >/dev/null; then
    debian12_missing="docker is not installed"
  elif ! docker info >/dev/null 2>"$log/info.err"; then
    debian12_missing="docker info failed (no daemon to talk to): $(tail -n1 "$log/info.err")"
  elif docker image inspect debian:12 >/dev/null 2>&1; then
    return 0
  elif ! command -v debootstrap >/dev/null &&
    ! DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y --no-install-recommends \
      debootstrap >"$log/apt.log" 2>&1; then
    debian12_missing="no debian:12 image, and apt-get could not install debootstrap to make one ($(tail -n1 "$log/apt.log"))"
  elif ! timeout 900 debootstrap --variant=minbase bookworm "$log/deb12" >"$log/debootstrap.log" 2>&1 ||
    ! tar -C "$log/deb12" -c . | docker import - debian:12 >>"$log/debootstrap.log" 2>&1; then
    debian12_missing="could not make debian:12 with debootstrap: $(tail -n1 "$log/debootstrap.log")"
  fi
  rm -rf "$log/deb12"
  [ -z "$debian12_missing" ]
}
