#!/usr/bin/env bash
# ci: required (CI=true: a skip here fails; see tests/run)
# timeout: 1500
# The daemon, the decoder and the unit tests under AddressSanitizer and
# UBSan (make sanitize's build, build-san/): the HTTP gate, the server's
# request paths, the chat templates and tool calls, every architecture of
# the reference comparison. Any sanitizer report fails (the daemon tests
# see a crashed server as a failed request; the logs are kept). This found
# the gate reading past its peek buffer on a 25-KB request.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
cd "$EDGEQ_TOP" || exit 1
SO=build-san
SAN="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
echo 'int main(void) { return 0; }' >"$T/p.c"
${CC:-cc} -fsanitize=address,undefined "$T/p.c" -o "$T/p" 2>/dev/null && "$T/p" ||
	skip_all "the compiler cannot build or run ASan+UBSan binaries"
# not -Werror: at -O1 with the sanitizers gcc warns of truncations that
# the -O2 build (warning-free under CI) does not see
if ! nice -n 5 make -j"$(nproc)" O=$SO OPT="$SAN" LDFLAGS="-fsanitize=address,undefined" \
	WERROR= tests >"$T/make.log" 2>&1; then
	grep -E 'error|Error' "$T/make.log" | tail -n 20
	check "the sanitizer build" false
	summary
	exit 1
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# the unit tests, leaks included, as make sanitize runs them
env -u EDGEQ_TEST_TMP O=$SO EDGEQ="$PWD/$SO/edgeq" tests/run unit >"$T/unit.log" 2>&1
rc=$? # before the check's own $(tail): its status would stand in for this one
check "unit tests under ASan+UBSan: $(tail -n 1 "$T/unit.log")" test $rc -eq 0 ||
	grep -E '^FAIL' "$T/unit.log"
# the daemon and the decoder (a server's leaks at SIGTERM are not findings)
export ASAN_OPTIONS=detect_leaks=0
for t in daemon/t_serve.py daemon/t_http.py daemon/t_chat_template.py daemon/t_session.py \
	daemon/t_keys.py decoder/t_ref.sh decoder/t_run.sh; do
	log=$T/$(basename "$t").log
	O=$SO EDGEQ="$PWD/$SO/edgeq" timeout 600 "tests/$t" >"$log" 2>&1
	rc=$?
	check "$t under ASan+UBSan: $(grep -E '^[0-9]+ passed' "$log" | tail -n 1)" test $rc -eq 0 ||
		{ grep -E '^FAIL' "$log" | head -5; cp "$log" "$EDGEQ_TOP/${O:-build}/test-logs/asan-$(basename "$t").log"; }
done
# a sanitizer report anywhere in the daemons' logs
if grep -rlE 'ERROR: AddressSanitizer|runtime error:' "$EDGEQ_TEST_TMP" /tmp/tmp* 2>/dev/null |
	xargs -r ls -t 2>/dev/null | head -n 3 >"$T/reports"; [ -s "$T/reports" ]; then
	for f in $(cat "$T/reports"); do
		[ "$(find "$f" -newer "$T/p.c" 2>/dev/null)" ] || continue
		grep -A12 -E 'ERROR: AddressSanitizer|runtime error:' "$f" | head -20
		check "no sanitizer report in $f" false
	done
fi
summary
