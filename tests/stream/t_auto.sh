#!/usr/bin/env bash
# --weights auto looks at the page cache: a model that fits and is already
# cached is mapped (mmap costs nothing then), a cold one is preloaded with
# O_DIRECT, one larger than the budget is streamed; the figures say which
# and why, and the tokens are the same in all three.
# timeout: 120
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/lib.sh"

# big enough (20 MB) that parsing the header does not read the tensors in
gen small --shape tiny --type f32 --layers 8
m=$T/small.gguf
run() {
	"$EDGEQ" run -m "$m" -p "$PROMPT" -n 8 --temp 0 -t 2 --no-roofline \
		--ctx-size 128 --json "$@" 2>"$T/err"
}
toks() { sed -n 's/.*"tokens":\(\[[^]]*\]\).*/\1/p'; }

ref=$(run --weights mmap | toks)
check "mmap gives tokens" test -n "$ref"

cat "$m" >/dev/null # warm
out=$(run)
check "warm file: auto picks mmap" grep -q '"weights":"mmap"' <<<"$out"
check "warm file: the reason names the page cache" \
	grep -q '"weights_why":"fits; [0-9]*% in page cache"' <<<"$out"
check "warm file: same tokens" test "$(toks <<<"$out")" = "$ref"

# cold: drop the file's pages (dd's nocache is POSIX_FADV_DONTNEED)
sync "$m"
dd if="$m" iflag=nocache count=0 status=none
res=$(fincore -nb -o RES "$m" 2>/dev/null || echo 0)
out=$(run)
if grep -q '"weights":"mmap"' <<<"$out" && grep -q 'O_DIRECT' <<<"$out"; then
	echo "ok - cold file: # skip: this file system cannot take O_DIRECT"
elif [ "${res:-0}" -gt $(($(stat -c %s "$m") / 2)) ]; then
	echo "ok - cold file: # skip: this file system keeps dropped pages (tmpfs?)"
else
	check "cold file: auto picks preload" grep -q '"weights":"preload"' <<<"$out"
	check "cold file: the reason says cold" grep -q '"weights_why":"fits; cold' <<<"$out"
fi
check "cold file: same tokens" test "$(toks <<<"$out")" = "$ref"

out=$(run --weights-budget 1)
check "small budget: auto streams" grep -q '"weights":"stream"' <<<"$out"
check "small budget: the reason names the budget" grep -q '"weights_why":"model .* > budget' <<<"$out"
check "small budget: same tokens" test "$(toks <<<"$out")" = "$ref"

out=$(run --weights preload)
check "a requested mode says so" grep -q '"weights_why":"requested"' <<<"$out"

# the figures line on stderr names the mode and the reason
cat "$m" >/dev/null
"$EDGEQ" run -m "$m" -p hi -n 2 --temp 0 --no-roofline >/dev/null 2>"$T/err"
check "figures line names the weights mode" grep -q '| weights mmap (fits; .*page cache)' "$T/err"
summary
