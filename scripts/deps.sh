#!/usr/bin/env bash
# Installs the Debian packages the tests need when they are missing. It installs only when run
# as root on a Debian-like system; elsewhere it says what is missing and carries on, so the
# tests that need a package can skip (or, under CI, fail) with their own message.
set -euo pipefail

# command -> package
declare -A need=(
  [git]=git
  [bash]=bash
  [bwrap]=bubblewrap # the bwrap backend, the default sandbox backend where it works
  [setpriv]=util-linux # bwrap sandboxes start as the unprivileged sandbox uid
  [slirp4netns]=slirp4netns # the egress network of bwrap sandboxes (the default network)
  [iptables]=iptables # keeps egress sandboxes off the host's own addresses
  [ip]=iproute2 # the escape suite makes a network namespace standing for the internet
  [dockerd]=docker.io # the docker backend's tests start a private engine
  [chromium]=chromium # the web app's browser tests (and make bench's page timings)
  # The Kubernetes cluster of the kubernetes backend's tests (internal/sandbox/kubernetes/kubetest)
  [containerd]=containerd # the node's container runtime (ctr comes with it)
  [runc]=runc
  [nsenter]=util-linux # starts the cluster's components in its network namespace
  [gcc]=gcc # make kube: the pause binary of the pod sandbox image
)
# file -> package, for packages that install no command of their own.
declare -A need_file=(
  [/usr/lib/cni/bridge]=containernetworking-plugins # the pods' network
  [/usr/include/stdio.h]=libc6-dev # gcc -static links the pause binary against libc.a
  [/etc/ssl/certs/ca-certificates.crt]=ca-certificates # make image puts them in agentd's image
)

# `deps.sh stress` also installs what `make stress` loads the machine with.
if [ "${1:-}" = stress ]; then
  need[stress-ng]=stress-ng
fi

missing=()
for cmd in "${!need[@]}"; do
  # /usr/sbin too: a non-root PATH may lack it, and dockerd lives there.
  command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || missing+=("${need[$cmd]}")
done
# The postgres store's tests start a throwaway server with initdb and pg_ctl, which Debian
# keeps off PATH, in /usr/lib/postgresql/<version>/bin.
have_initdb() {
  command -v initdb >/dev/null 2>&1 && return 0
  local f
  for f in /usr/lib/postgresql/*/bin/initdb; do
    [ -x "$f" ] && return 0
  done
  return 1
}
have_initdb || missing+=(postgresql)
for file in "${!need_file[@]}"; do
  [ -e "$file" ] || missing+=("${need_file[$file]}")
done
# The busybox of the cluster tests' image must be static: Debian's busybox package installs a
# dynamically linked one at the same path (ldd fails on a static executable).
if [ ! -x /bin/busybox ] || ldd /bin/busybox >/dev/null 2>&1; then
  missing+=(busybox-static)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "deps: missing packages: ${missing[*]} (run as root on Debian to install them)" >&2
  exit 0
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
