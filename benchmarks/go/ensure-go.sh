#!/usr/bin/env bash
# Print the path of a Go >= 1.24 `go` command for the provider benchmarks, fetching Debian trixie's
# golang-1.24 when none is on PATH.
#
# Why 1.24: Gatekeeper v3.20 is a Go 1.24 module, and from that version on Go's TLS client offers the
# hybrid post-quantum key share X25519MLKEM768 besides X25519. Which one a server picks changes its
# handshake, so the benchmark's Gatekeeper client (gkclient) and the Go reference provider must be built
# as Gatekeeper is (benchmarks/go/go.mod says go 1.24). Debian 12's golang-go is 1.19.
#
# Fetched through a private APT configuration (`apt-get download`, `dpkg-deb -x`): the machine's own APT
# state is untouched. Cached in ${KTP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubeflow-trainer-policy}.
# stdout carries only the path; progress goes to stderr. KTP_DEBIAN_MIRROR overrides the mirror.
set -euo pipefail

VERSION=1.24
SUITE=trixie
CACHE_DIR="${KTP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubeflow-trainer-policy}"
ROOT="$CACHE_DIR/tools/go-$VERSION"
GO="$ROOT/usr/lib/go-$VERSION/bin/go"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

log() { printf '[ensure-go] %s\n' "$*" >&2; }
die() {
    printf 'ensure-go: %s\n' "$*" >&2
    exit 1
}

recent_enough() {
    local version
    version="$("$1" env GOVERSION 2>/dev/null)" || return 1
    version="${version#go}"
    [[ "$version" =~ ^1\.([0-9]+) ]] && ((BASH_REMATCH[1] >= ${VERSION#1.}))
}

if command -v go >/dev/null && recent_enough "$(command -v go)"; then
    command -v go
    exit 0
fi
if [[ -x "$GO" ]] && recent_enough "$GO"; then
    echo "$GO"
    exit 0
fi

mkdir -p "$CACHE_DIR/tools"
exec 9>"$CACHE_DIR/.go-$VERSION.lock"
flock 9 || die "cannot lock $CACHE_DIR/.go-$VERSION.lock"
if [[ -x "$GO" ]] && recent_enough "$GO"; then
    echo "$GO"
    exit 0
fi

[[ -r "$KEYRING" ]] || die "missing $KEYRING (package debian-archive-keyring)"
mirror="${KTP_DEBIAN_MIRROR:-}"
if [[ -z "$mirror" ]]; then
    mirror="$(grep -rhoE '(URIs:[[:space:]]*|^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?)https?://[^[:space:]]+/debian/?' \
        /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null | grep -oE 'https?://[^[:space:]]+' | head -1 || true)"
fi
[[ -n "$mirror" ]] || die "no Debian mirror found in /etc/apt/sources.list*; set KTP_DEBIAN_MIRROR"
mirror="${mirror%/}"

apt_dir="$(mktemp -d "$CACHE_DIR/tools/apt-go.XXXXXX")"
trap 'rm -rf "$apt_dir"' EXIT
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/parts" "$apt_dir/prefs" "$apt_dir/debs"
: >"$apt_dir/status"
echo "deb [signed-by=$KEYRING] $mirror $SUITE main" >"$apt_dir/sources.list"
APT=(apt-get -q
    -o "Dir::Etc::SourceList=$apt_dir/sources.list"
    -o "Dir::Etc::SourceParts=$apt_dir/parts"
    -o "Dir::Etc::PreferencesParts=$apt_dir/prefs"
    -o "Dir::State=$apt_dir"
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::State::status=$apt_dir/status"
    -o "Dir::Cache=$apt_dir"
    -o "Dir::Cache::Archives=$apt_dir/archives"
    -o "Dir::Cache::pkgcache="
    -o "Dir::Cache::srcpkgcache="
    -o "APT::Sandbox::User=root"
    -o "Debug::NoLocking=1")
log "apt-get update (private, $mirror $SUITE)"
"${APT[@]}" update >&2 || die "private apt-get update failed"
log "apt-get download golang-$VERSION-go golang-$VERSION-src"
(cd "$apt_dir/debs" && "${APT[@]}" download "golang-$VERSION-go" "golang-$VERSION-src" >&2) ||
    die "apt-get download golang-$VERSION failed"
rm -rf "$ROOT.partial"
for deb in "$apt_dir"/debs/*.deb; do
    dpkg-deb -x "$deb" "$ROOT.partial" || die "dpkg-deb -x $deb failed"
done
rm -rf "$ROOT"
mv "$ROOT.partial" "$ROOT"
recent_enough "$GO" || die "$GO does not run"
log "$("$GO" version)"
echo "$GO"
