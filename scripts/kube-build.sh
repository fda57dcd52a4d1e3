#!/usr/bin/env bash
# Builds the Kubernetes binaries that kubetest's clusters run (kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, etcd) and the pause binary of the
# pod sandbox image, from the Go module proxy, at the version pinned by the wrapper module
# internal/sandbox/kubernetes/kubetest/kbuild. They go to a cache keyed by that version:
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/agentd-kube/<version>/bin
#
# and the script does nothing when that directory is there: it appears whole, renamed from a
# temporary directory once everything is built, so an interrupted build leaves no half cache.
# A cold build downloads about 600 MB of modules and compiles most of Kubernetes: 6 minutes
# on 2 idle cores, up to 17 on busy ones, with 2 GB of memory and 3 GB of Go build cache;
# with Go's build cache warm it only links (under a minute).
#
#   scripts/kube-build.sh            build unless cached
#   scripts/kube-build.sh -bin-dir   print the cache's bin directory
#   scripts/kube-build.sh -pin 1.36.0
#                                    rewrite the wrapper module for another version (then
#                                    update kubetest.Version to match and build)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mod=$root/internal/sandbox/kubernetes/kubetest/kbuild

# pin rewrites the wrapper's go.mod: it requires k8s.io/kubernetes at the version and
# replaces each staging module (k8s.io/kubernetes's own go.mod points them at ./staging,
# which a module dependency cannot use) with its published v0.<minor>.<patch>. The go and
# godebug lines are k8s.io/kubernetes's own, so the binaries behave as upstream's do.
pin() {
  local v=${1#v}
  local upstream
  upstream=$(cd "$mod" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@v$v" |
    sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  {
    printf '// Pins the Kubernetes release that kubetest clusters run; scripts/kube-build.sh builds it.\n'
    printf '// A module of its own so that its replace lines and some 200 modules stay out of agentd'"'"'s.\n'
    printf '// Regenerate with scripts/kube-build.sh -pin VERSION.\n'
    printf 'module github.com/agentd/agentd/internal/sandbox/kubernetes/kubetest/kbuild\n\n'
    grep -E '^(go|godebug) ' "$upstream" | sed 's/$/\n/'
    printf 'require k8s.io/kubernetes v%s\n\n' "$v"
    printf 'tool (\n'
    printf '\tgo.etcd.io/etcd/server/v3\n'
    for c in kube-apiserver kube-controller-manager kube-scheduler kubelet; do
      printf '\tk8s.io/kubernetes/cmd/%s\n' "$c"
    done
    printf ')\n\nreplace (\n'
    grep -E '^\s*k8s.io/\S+ => ./staging/' "$upstream" |
      awk -v v="v0.${v#1.}" '{print "\t"$1" => "$1" "v}'
    printf ')\n'
  } >"$mod/go.mod"
  rm -f "$mod/go.sum"
  (cd "$mod" && GOWORK=off go mod tidy)
  echo "pinned k8s.io/kubernetes v$v in $mod/go.mod; set kubetest.Version to v$v"
}

if [ "${1:-}" = -pin ]; then
  pin "${2:?usage: kube-build.sh -pin VERSION}"
  exit 0
fi

version=$(cd "$mod" && GOWORK=off go list -m -f '{{.Version}}' k8s.io/kubernetes)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/agentd-kube/$version
bin=$cache/bin
if [ "${1:-}" = -bin-dir ]; then
  echo "$bin"
  exit 0
fi
[ -d "$bin" ] && exit 0

mkdir -p "$cache"
# One build at a time: a second caller waits, then finds the cache.
exec 9>"$cache/build.lock"
flock 9
[ -d "$bin" ] && exit 0
# What a build killed before its clean-up left.
rm -rf "$cache"/bin.tmp.*

tmp=$(mktemp -d "$cache/bin.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "kube-build: building Kubernetes $version into $bin (a cold build takes 6 to 17 minutes)"
start=$SECONDS

minor=${version#v1.}
minor=${minor%%.*}
ld="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
(cd "$mod" && GOWORK=off CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "$ld" -o "$tmp/" tool)
# The etcd server's main package is go.etcd.io/etcd/server/v3, which go build names "server".
mv "$tmp/server" "$tmp/etcd"

# The pod sandbox's pause binary, from the pause.c of the same release, built as upstream's
# build/pause/Makefile builds it.
kdir=$(cd "$mod" && GOWORK=off go list -m -f '{{.Dir}}' k8s.io/kubernetes)
gcc -Os -Wall -Werror -static -DVERSION="$version" -o "$tmp/pause" "$kdir/build/pause/linux/pause.c"
strip "$tmp/pause"

chmod 0755 "$tmp"
mv -T "$tmp" "$bin"
trap - EXIT
echo "kube-build: built in $((SECONDS - start)) s: $(ls "$bin" | tr '\n' ' ')"
