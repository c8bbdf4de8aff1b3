#!/bin/sh
# Tools the provider benchmark needs: Go (Debian's golang-go) to build the reference provider, the TLS
# echo and the load generator under benchmarks/go/, taskset (util-linux) to pin server and client, and
# valgrind for benchmarks/provider_instructions.py (instruction counts, which the machine's load cannot move).
set -eu
missing=""
command -v go >/dev/null 2>&1 || missing="$missing golang-go"
command -v taskset >/dev/null 2>&1 || missing="$missing util-linux"
command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
