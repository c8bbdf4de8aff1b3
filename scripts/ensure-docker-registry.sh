#!/usr/bin/env bash
# Ensure Debian's OCI registry (package docker-registry, the CNCF distribution registry) and
# htpasswd (package apache2-utils) exist for the bundle tests, installing them with apt-get when
# missing, and print their paths:
#
#   DOCKER_REGISTRY=/usr/bin/docker-registry
#   HTPASSWD=/usr/bin/htpasswd
#
# stdout carries only those two lines; progress goes to stderr. Nothing is started: the tests
# run their own registry on 127.0.0.1 with a temporary config and storage folder.
# Overrides: DOCKER_REGISTRY / HTPASSWD (use these binaries).
set -euo pipefail

die() {
    printf 'ensure-docker-registry: %s\n' "$*" >&2
    exit 1
}

registry="${DOCKER_REGISTRY:-$(command -v docker-registry || true)}"
htpasswd="${HTPASSWD:-$(command -v htpasswd || true)}"
if [[ -z "$registry" || -z "$htpasswd" ]]; then
    sudo=""
    if [[ "$(id -u)" != 0 ]]; then
        command -v sudo >/dev/null || die "docker-registry or htpasswd is missing and installing needs root (or sudo)"
        sudo="sudo -n"
    fi
    printf '[ensure-docker-registry] apt-get install docker-registry apache2-utils\n' >&2
    install() {
        DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -q \
            --no-install-recommends docker-registry apache2-utils >&2
    }
    if ! install; then
        $sudo apt-get -o DPkg::Lock::Timeout=600 update -q >&2 || die "apt-get update failed"
        install || die "apt-get install docker-registry apache2-utils failed"
    fi
    registry="$(command -v docker-registry)" || die "docker-registry not on PATH after install"
    htpasswd="$(command -v htpasswd)" || die "htpasswd not on PATH after install"
fi
[[ -x "$registry" ]] || die "$registry is not executable"
[[ -x "$htpasswd" ]] || die "$htpasswd is not executable"
printf 'DOCKER_REGISTRY=%s\nHTPASSWD=%s\n' "$registry" "$htpasswd"
