# Sourced by the engine cases that need a pinned npm package in a cache beside the build.
# npm_install DIR LOG PACKAGE...: installs the PACKAGEs (name@version) into DIR, npm's output in
# LOG; prints why it could not (naming the first PACKAGE), or nothing.
npm_install() {
  local dir=$1 log=$2
  shift 2
  mkdir -p "$dir"
  if ! command -v npm >/dev/null; then
    echo "npm is not installed"
  elif ! (cd "$dir" && timeout 300 npm install --no-audit --no-fund --silent "$@" >"$log" 2>&1); then
    echo "npm could not install ${1%@*} ($(tail -n1 "$log"))"
  fi
}
