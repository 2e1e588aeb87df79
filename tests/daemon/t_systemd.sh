#!/usr/bin/env bash
# The unit file: systemd-analyze verify is clean, and the hardening the
# admin guide promises is there.
# timeout: 240
set -u
. "$(dirname "$0")/../lib/testlib.sh"
command -v systemd-analyze >/dev/null || skip_all "systemd-analyze is not installed"
unit=$EDGEQ_TOP/tools/systemd/edgeq.service
bindir=$(cd "$(dirname "$EDGEQ")" && pwd)
[ -x "$bindir/edgeq" ] || skip_all "no edgeq binary in $bindir"
sed "s|@BINDIR@|$bindir|" "$unit" >"$T/edgeq.service"
# --man=no: the man page is not installed in a build tree
systemd-analyze verify --man=no "$T/edgeq.service" >"$T/out" 2>&1
check "systemd-analyze verify is clean" test $? -eq 0 -a ! -s "$T/out"
cat "$T/out"
for kv in Type=notify WatchdogSec= Restart=on-failure DynamicUser=yes \
	ProtectSystem=strict PrivateTmp=yes NoNewPrivileges=yes \
	"CapabilityBoundingSet=CAP_BPF CAP_PERFMON" MemoryHigh= MemoryMax= \
	"ExecStart=@BINDIR@/edgeq serve" DevicePolicy=closed \
	"DeviceAllow=char-edgeq rw" "DeviceAllow=/dev/edgeq-control r"; do
	check "unit has $kv" grep -q "^$kv" "$unit"
done
if systemd-analyze security --help 2>/dev/null | grep -q -- --offline; then
	score=$(systemd-analyze security --offline=yes "$T/edgeq.service" 2>/dev/null |
		sed -n 's/.*Overall exposure level for edgeq.service: \([0-9.]*\).*/\1/p')
	check "exposure level below 4 (got ${score:-?})" awk -v s="${score:-99}" 'BEGIN{exit !(s < 4)}'
fi
# the install target: unit with @BINDIR@ substituted, example configuration
make -s -C "$EDGEQ_TOP" install O="$O" DESTDIR="$T/stage" PREFIX=/usr >"$T/inst.log" 2>&1
check "make install succeeds" test $? -eq 0 || tail -5 "$T/inst.log"
check "unit installed with its ExecStart path" \
	grep -q '^ExecStart=/usr/bin/edgeq serve' "$T/stage/usr/lib/systemd/system/edgeq.service"
check "example configuration installed" test -f "$T/stage/etc/edgeq/edgeq.conf"
check "edgeq-serve(1) installed" test -f "$T/stage/usr/share/man/man1/edgeq-serve.1"
# the unit as installed, man page reference included
if command -v man >/dev/null; then
	# installed for real under a prefix of its own, so ExecStart resolves
	make -s -C "$EDGEQ_TOP" install O="$O" PREFIX="$T/prefix" \
		SYSCONFDIR="$T/prefix/etc" >"$T/inst2.log" 2>&1
	MANPATH=$T/prefix/share/man systemd-analyze verify \
		"$T/prefix/lib/systemd/system/edgeq.service" >"$T/out2" 2>&1
	check "systemd-analyze verify is clean on the installed unit, man page resolved" \
		test $? -eq 0 -a ! -s "$T/out2"
	cat "$T/out2"
else
	echo "man is not installed: the installed unit's man: reference not checked"
fi
echo "# edited" >>"$T/stage/etc/edgeq/edgeq.conf"
make -s -C "$EDGEQ_TOP" install-serve-config O="$O" DESTDIR="$T/stage" >/dev/null 2>&1
check "an existing configuration is kept" grep -q '^# edited' "$T/stage/etc/edgeq/edgeq.conf"
summary
