#!/usr/bin/env bash
# timeout: 300
# `make install DESTDIR= PREFIX=` stages the command, library, headers,
# pkg-config file, man page and module source; a program builds against the
# staged library through pkg-config and runs.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
cd "$EDGEQ_TOP"
D=$T/stage
make -s install O="$O" DESTDIR="$D" PREFIX=/usr >"$T/log" 2>&1
check "make install succeeds" test $? -eq 0 || cat "$T/log"
check "command installed" test -x "$D/usr/bin/edgeq"
check "static library installed" test -f "$D/usr/lib/libedgeq.a"
check "shared library with soname link" test -L "$D/usr/lib/libedgeq.so.0"
check "public header installed" test -f "$D/usr/include/edgeq/edgeq.h"
check "pkg-config file installed" test -f "$D/usr/lib/pkgconfig/edgeq.pc"
check "man page installed" test -f "$D/usr/share/man/man1/edgeq.1"
check "module source installed" test -f "$D/usr/src/edgeq-$("$EDGEQ" version --json | sed -E 's/.*"version": "([^"]+)".*/\1/')/dkms.conf"
# Only the edgeq_ prefix is exported from the shared library.
bad=$(nm -D --defined-only "$D/usr/lib/libedgeq.so.0" | awk '$2 ~ /[TDBR]/ {print $3}' | grep -v '^edgeq_' | grep -v '^EDGEQ_' | head -5)
check "shared library exports only edgeq_* (found: ${bad:-none})" test -z "$bad"
cat >"$T/p.c" <<'C'
#include <stdio.h>
#include <edgeq/edgeq.h>
int main(void) { puts(edgeq_version()); return 0; }
C
flags=$(PKG_CONFIG_PATH="$D/usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$D" pkg-config --cflags --libs edgeq)
cc -o "$T/p" "$T/p.c" $flags >"$T/cc.log" 2>&1
check "a program links against the installed library via pkg-config" test $? -eq 0 || cat "$T/cc.log"
out=$(LD_LIBRARY_PATH="$D/usr/lib" "$T/p" 2>&1)
check "and runs, printing the version ($out)" grep -qE '^[0-9]+\.[0-9]+' <<<"$out"
summary
