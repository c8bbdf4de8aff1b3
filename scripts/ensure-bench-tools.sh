#!/bin/sh
# Tools the provider benchmarks need: taskset (util-linux) to pin server and client, valgrind for
# benchmarks/provider_instructions.py (instruction counts, which the machine's load cannot move), and Go >= 1.24,
# Gatekeeper's, to build Gatekeeper's client and the anchors under benchmarks/go/ (benchmarks/go/ensure-go.sh
# fetches Debian's golang-1.24 into the cache when the go on PATH is older, as Debian 12's is).
set -eu
missing=""
command -v taskset >/dev/null 2>&1 || missing="$missing util-linux"
command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"
if [ -n "$missing" ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi
"$(dirname "$0")/../benchmarks/go/ensure-go.sh" >/dev/null
