#!/bin/sh
# pack-runtime.sh AGENTD RUNTIME: append the runtime-only build RUNTIME to the agentd
# executable AGENTD, followed by the trailer that `agentd serve` reads to find it:
#   \nagentd-runtime sha256=<64 hex digits> size=<20 decimal digits>\n
# (see internal/runtime/binary.go). AGENTD must be a fresh build: packing twice appends twice.
set -eu
if [ $# -ne 2 ]; then
	echo "usage: $0 AGENTD RUNTIME" >&2
	exit 2
fi
agentd=$1 runtime=$2
size=$(wc -c <"$runtime" | tr -d ' ')
sum=$(sha256sum "$runtime" | cut -d' ' -f1)
cat "$runtime" >>"$agentd"
printf '\nagentd-runtime sha256=%s size=%020d\n' "$sum" "$size" >>"$agentd"
