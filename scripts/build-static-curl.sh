#!/usr/bin/env bash
# Builds a minimal static libcurl for the portable binary: usage build-static-curl.sh PREFIX.
#
# Why: Debian 12 ships libcurl.a, but its dependency closure (GSSAPI/Kerberos, LDAP, nghttp2,
# libpsl, librtmp, libssh2, zstd) has no static archives, so `-static` against it cannot
# link. agentexec only speaks HTTP(S)/1.1 to model APIs, so we build Debian's own curl
# source package (Debian's security patches included) with HTTP and TLS only:
#   - OpenSSL and zlib from Debian's libssl-dev / zlib1g-dev static archives;
#   - c-ares (libc-ares-dev ships libcares.a) as the resolver, so a static glibc binary never
#     calls getaddrinfo() and never needs the host's NSS modules (which a static glibc would
#     dlopen, and which must match its own glibc version);
#   - no built-in CA path: agentexec finds the host's bundle at run time (base/tls_roots).
# The source comes through apt (a private deb-src list derived from the system's sources).
# Cross builds (make dist ARCH=aarch64): build-static-curl.sh PREFIX HOST, HOST a GNU triplet
# (aarch64-linux-gnu) whose cross compiler and multiarch -dev packages are installed
# (install-deps.sh dist-aarch64); pkg-config then reads only that triplet's .pc files.
set -euo pipefail
prefix=$(realpath -m "${1:?usage: build-static-curl.sh PREFIX [HOST]}")
host=${2:-}
[ -f "$prefix/lib/libcurl.a" ] && exit 0

work="$prefix.src"
rm -rf "$work" && mkdir -p "$work/lists/partial" "$work/sources.list.d"
cd "$work"
# The source comes from the mirrors this machine's apt already uses: each `deb` entry of the
# system's sources (one-line and deb822 forms) is repeated as `deb-src` in a private list, so
# no mirror is named here and the system's own apt configuration is left as it is.
: >sources.list
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] && sed -n 's/^[[:space:]]*deb[[:space:]]\+/deb-src /p' "$f" >>sources.list
done
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && sed 's/^Types:.*$/Types: deb-src/' "$f" >"sources.list.d/$(basename "$f")"
done
apt_opts=(-o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts="$work/sources.list.d"
  -o Dir::State::Lists="$work/lists" -o APT::Sandbox::User=root)
echo "build-static-curl: fetching Debian's curl source" >&2
apt-get "${apt_opts[@]}" update -qq >&2
apt-get "${apt_opts[@]}" source --download-only -qq curl >&2
dpkg-source -x ./curl_*.dsc src >/dev/null

cd src
cross=()
if [ -n "$host" ]; then
  cross=(--host="$host" CC="$host-gcc" AR="$host-ar" RANLIB="$host-ranlib")
  export PKG_CONFIG_LIBDIR="/usr/lib/$host/pkgconfig:/usr/share/pkgconfig"
fi
echo "build-static-curl: configuring (HTTP + OpenSSL + c-ares only${host:+, for $host})" >&2
./configure "${cross[@]}" --prefix="$prefix" --disable-shared --enable-static --with-pic \
  --with-openssl --enable-ares --with-zlib \
  --without-libidn2 --without-libpsl --without-nghttp2 --without-brotli --without-zstd \
  --without-librtmp --without-libssh2 --without-libssh --without-gssapi --without-libgsasl \
  --disable-ldap --disable-ldaps --disable-rtsp --disable-dict --disable-telnet \
  --disable-tftp --disable-pop3 --disable-imap --disable-smb --disable-smtp --disable-gopher \
  --disable-mqtt --disable-ftp --disable-file --disable-manual --disable-ntlm \
  --disable-alt-svc --disable-hsts --disable-netrc --disable-docs \
  --without-ca-bundle --without-ca-path --without-ca-fallback >config.out 2>&1 ||
  { tail -30 config.out >&2; exit 1; }
make -j"$(nproc)" -C lib >build.out 2>&1 || { tail -30 build.out >&2; exit 1; }
make -C lib install >/dev/null
make -C include install >/dev/null
install -Dm644 libcurl.pc "$prefix/lib/pkgconfig/libcurl.pc"
rm -rf "$work"
echo "build-static-curl: $prefix/lib/libcurl.a" >&2
