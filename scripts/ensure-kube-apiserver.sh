#!/usr/bin/env bash
# Ensure a real kube-apiserver and etcd exist for the tests, building or
# downloading them from Debian packages only, and print their paths:
#
#   KUBE_APISERVER=/path/to/kube-apiserver
#   ETCD=/path/to/etcd
#
# stdout carries only those two lines; progress goes to stderr.
#
# kube-apiserver is built from Debian bookworm's source package `kubernetes`
# (1.20.x, all dependencies vendored) with golang-1.15 from Debian bullseye
# (bookworm's golang-1.19 produces a binary that wrongly rejects CRD schemas
# with `default: ""`). etcd is Debian bookworm's `etcd-server`. Everything is
# fetched through a private APT configuration (`apt-get download`,
# `apt-get source`, `dpkg-deb -x`) so the machine's own APT state is untouched,
# and cached in
#
#   ${KTP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubeflow-trainer-policy}
#
# Overrides: KUBE_APISERVER / ETCD (use these binaries), KTP_DEBIAN_MIRROR
# (Debian mirror URI; default: the one configured in /etc/apt), KTP_KEEP_BUILD=1
# (keep the ~2 GB build tree in the cache), KTP_BUILD_JOBS (make -j).
set -euo pipefail

log() { printf '[ensure-kube-apiserver] %s\n' "$*" >&2; }
die() {
    printf 'ensure-kube-apiserver: %s\n' "$*" >&2
    exit 1
}

CACHE_DIR="${KTP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubeflow-trainer-policy}"
BIN_DIR="$CACHE_DIR/bin"
APT_DIR="$CACHE_DIR/apt"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

mkdir -p "$BIN_DIR" || die "cannot create cache dir $CACHE_DIR"
command -v flock >/dev/null || die "flock (util-linux) is required"
exec 9>"$CACHE_DIR/.lock"
flock 9 || die "cannot lock $CACHE_DIR/.lock"

works() { [[ -x "$1" ]] && "$1" --version >/dev/null 2>&1; }

# ---------------------------------------------------------------- private APT
apt_ready=0
MIRROR=""

find_mirror() {
    if [[ -n "${KTP_DEBIAN_MIRROR:-}" ]]; then
        MIRROR="${KTP_DEBIAN_MIRROR%/}"
        return
    fi
    local f uri
    # deb822 .sources files: the URIs of a stanza whose Suites name bookworm
    # (not bookworm-security).
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f "$f" ]] || continue
        uri="$(awk '
            BEGIN { RS = ""; FS = "\n" }
            {
                uris = ""; suites = ""; types = ""
                for (i = 1; i <= NF; i++) {
                    if ($i ~ /^URIs:/)   { uris = $i;   sub(/^URIs:[ \t]*/, "", uris) }
                    if ($i ~ /^Suites:/) { suites = $i }
                    if ($i ~ /^Types:/)  { types = $i }
                }
                if (types ~ /deb/ && suites ~ /[ \t]bookworm([ \t]|$)/ && uris != "") {
                    split(uris, u, /[ \t]+/); print u[1]; exit
                }
            }' "$f")"
        if [[ -n "$uri" ]]; then
            MIRROR="${uri%/}"
            return
        fi
    done
    # one-line format
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -f "$f" ]] || continue
        uri="$(awk '$1 == "deb" {
                    i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
                    if ($(i + 1) == "bookworm") { print $i; exit }
                }' "$f")"
        if [[ -n "$uri" ]]; then
            MIRROR="${uri%/}"
            return
        fi
    done
    die "no Debian bookworm mirror found in /etc/apt/sources.list*; set KTP_DEBIAN_MIRROR"
}

APT=()
setup_apt() {
    [[ $apt_ready == 1 ]] && return
    command -v apt-get >/dev/null || die "apt-get is required"
    [[ -r "$KEYRING" ]] || die "missing $KEYRING (package debian-archive-keyring)"
    find_mirror
    log "private APT config in $APT_DIR, mirror $MIRROR"
    mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/archives/partial" "$APT_DIR/parts" \
        "$APT_DIR/prefs"
    : >"$APT_DIR/status"
    cat >"$APT_DIR/sources.list" <<EOF
deb [signed-by=$KEYRING] $MIRROR bookworm main
deb-src [signed-by=$KEYRING] $MIRROR bookworm main
deb [signed-by=$KEYRING] $MIRROR bullseye main
EOF
    APT=(apt-get -q
        -o "Dir::Etc::SourceList=$APT_DIR/sources.list"
        -o "Dir::Etc::SourceParts=$APT_DIR/parts"
        -o "Dir::Etc::Preferences=$APT_DIR/prefs/none"
        -o "Dir::Etc::PreferencesParts=$APT_DIR/prefs"
        -o "Dir::State=$APT_DIR"
        -o "Dir::State::Lists=$APT_DIR/lists"
        -o "Dir::State::status=$APT_DIR/status"
        -o "Dir::Cache=$APT_DIR"
        -o "Dir::Cache::Archives=$APT_DIR/archives"
        -o "Dir::Cache::pkgcache="
        -o "Dir::Cache::srcpkgcache="
        -o "APT::Sandbox::User=root"
        -o "Debug::NoLocking=1")
    log "apt-get update (private)"
    "${APT[@]}" -o APT::Update::Error-Mode=any update >&2 ||
        die "private apt-get update failed (mirror $MIRROR unreachable or incomplete)"
    apt_ready=1
}

# Download a binary package with the private APT config and extract it into $2.
# $1 may carry a release pin, e.g. golang-1.15-go/bullseye.
fetch_deb() {
    local pkg="$1" dest="$2" tmp deb
    setup_apt
    tmp="$(mktemp -d "$CACHE_DIR/dl.XXXXXX")"
    log "apt-get download $pkg"
    (cd "$tmp" && "${APT[@]}" download "$pkg" >&2) || {
        rm -rf "$tmp"
        die "apt-get download $pkg failed"
    }
    mkdir -p "$dest"
    for deb in "$tmp"/*.deb; do
        dpkg-deb -x "$deb" "$dest" || {
            rm -rf "$tmp"
            die "dpkg-deb -x $deb failed"
        }
    done
    rm -rf "$tmp"
}

# ----------------------------------------------------------------------- etcd
ensure_etcd() {
    if [[ -n "${ETCD:-}" ]]; then
        works "$ETCD" || die "ETCD=$ETCD is not a working etcd binary"
        ETCD_PATH="$ETCD"
        return
    fi
    local cached="$BIN_DIR/etcd"
    if works "$cached"; then
        ETCD_PATH="$cached"
        return
    fi
    local sys
    if sys="$(command -v etcd 2>/dev/null)" && works "$sys"; then
        ETCD_PATH="$sys"
        return
    fi
    local root="$CACHE_DIR/etcd-root"
    rm -rf "$root"
    fetch_deb etcd-server/bookworm "$root"
    [[ -x "$root/usr/bin/etcd" ]] || die "etcd-server package has no usr/bin/etcd"
    cp "$root/usr/bin/etcd" "$cached.tmp" && mv "$cached.tmp" "$cached"
    rm -rf "$root"
    works "$cached" || die "extracted etcd does not run: $cached"
    ETCD_PATH="$cached"
}

# ------------------------------------------------------------- kube-apiserver
ensure_rsync() {
    # the Kubernetes build scripts copy their outputs with rsync
    if command -v rsync >/dev/null && rsync --version >/dev/null 2>&1; then
        return
    fi
    local root="$CACHE_DIR/tools/rsync"
    if [[ ! -x "$root/usr/bin/rsync" ]]; then
        rm -rf "$root"
        # rsync plus the libraries a bare bookworm machine may lack
        fetch_deb rsync/bookworm "$root"
        fetch_deb libpopt0/bookworm "$root"
        fetch_deb libxxhash0/bookworm "$root"
    fi
    export PATH="$root/usr/bin:$PATH"
    export LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    rsync --version >/dev/null 2>&1 || die "privately extracted rsync does not run"
}

ensure_go115() {
    local root="$CACHE_DIR/tools/go-1.15"
    GOROOT_115="$root/usr/lib/go-1.15"
    if [[ -x "$GOROOT_115/bin/go" ]] && GOENV=off "$GOROOT_115/bin/go" version >/dev/null 2>&1; then
        return
    fi
    rm -rf "$root"
    fetch_deb golang-1.15-go/bullseye "$root"
    fetch_deb golang-1.15-src/bullseye "$root"
    # golang-1.15-go ships GOROOT/src etc. as symlinks to /usr/share/go-1.15;
    # repoint them into the private tree.
    local link target
    while IFS= read -r -d '' link; do
        target="$(readlink "$link")"
        if [[ "$target" == /usr/share/go-1.15* ]]; then
            ln -sfn "$root$target" "$link"
        fi
    done < <(find "$root/usr/lib/go-1.15" -maxdepth 2 -type l -print0)
    GOENV=off "$GOROOT_115/bin/go" version >/dev/null 2>&1 || die "extracted golang-1.15 does not run"
}

ensure_build_tools() {
    local missing=()
    command -v make >/dev/null || missing+=(make)
    command -v gcc >/dev/null || missing+=(gcc)
    command -v dpkg-source >/dev/null || missing+=(dpkg-dev)
    command -v patch >/dev/null || missing+=(patch)
    if ((${#missing[@]})); then
        [[ $(id -u) == 0 ]] || die "missing build tools (${missing[*]}); install them or run as root"
        log "apt-get install ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            "${missing[@]}" >&2 || die "apt-get install ${missing[*]} failed"
    fi
}

build_apiserver() {
    local out="$BIN_DIR/kube-apiserver"
    ensure_build_tools
    ensure_rsync
    ensure_go115
    setup_apt
    local build="$CACHE_DIR/build"
    rm -rf "$build"
    mkdir -p "$build"
    log "apt-get source kubernetes (bookworm)"
    (cd "$build" && "${APT[@]}" source kubernetes/bookworm >&2) ||
        die "apt-get source kubernetes failed"
    local src
    src="$(find "$build" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-*' | head -n1)"
    [[ -n "$src" && -f "$src/Makefile" ]] || die "unpacked kubernetes source not found in $build"
    local srcver
    srcver="$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version 2>/dev/null || echo unknown)"
    local upstream="${srcver#*really}"
    upstream="${upstream%%-*}"
    log "building kube-apiserver from kubernetes $srcver (go 1.15, this takes minutes)"
    local start=$SECONDS
    (
        cd "$src"
        export GOROOT="$GOROOT_115" PATH="$GOROOT_115/bin:$PATH"
        # The machine's go env file (GOENV) may set flags Go 1.15 does not know (-buildvcs): ignore it.
        export GOENV=off GOFLAGS="" GOCACHE="$build/gocache" GOPROXY=off GOTOOLCHAIN=local
        export KUBE_GIT_VERSION="v$upstream" KUBE_GIT_TREE_STATE=clean KUBE_GIT_COMMIT=""
        export KUBE_BUILD_PLATFORMS=linux/amd64
        make WHAT=cmd/kube-apiserver >&2
    ) || die "kube-apiserver build failed (see log above; tree kept in $build)"
    local built
    built="$(find "$src/_output" -type f -name kube-apiserver -perm -u+x | head -n1)"
    [[ -n "$built" ]] || die "build finished but no kube-apiserver under $src/_output"
    cp "$built" "$out.tmp" && mv "$out.tmp" "$out"
    echo "$srcver" >"$out.source-version"
    log "built $out in $((SECONDS - start)) s"
    if [[ "${KTP_KEEP_BUILD:-0}" != 1 ]]; then
        rm -rf "$build" "$CACHE_DIR/tools/go-1.15"
    fi
    works "$out" || die "built kube-apiserver does not run: $out"
}

ensure_apiserver() {
    if [[ -n "${KUBE_APISERVER:-}" ]]; then
        works "$KUBE_APISERVER" || die "KUBE_APISERVER=$KUBE_APISERVER is not a working binary"
        APISERVER_PATH="$KUBE_APISERVER"
        return
    fi
    local out="$BIN_DIR/kube-apiserver"
    if ! works "$out"; then
        build_apiserver
    fi
    APISERVER_PATH="$out"
}

APISERVER_PATH=""
ETCD_PATH=""
ensure_apiserver
ensure_etcd
if [[ $apt_ready == 1 && "${KTP_KEEP_BUILD:-0}" != 1 ]]; then
    rm -rf "$APT_DIR" # package lists (~50 MB); only needed to (re)build
fi
log "kube-apiserver: $("$APISERVER_PATH" --version 2>&1), etcd: $("$ETCD_PATH" --version 2>&1 | head -n1)"
printf 'KUBE_APISERVER=%s\nETCD=%s\n' "$APISERVER_PATH" "$ETCD_PATH"
