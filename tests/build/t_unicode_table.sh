#!/usr/bin/env bash
# The committed Unicode table (userspace/lib/model/unicode_table.c) is what
# tools/gen-unicode-table makes from this machine's Unicode Character
# Database (Debian's unicode-data); a missing database is a clear error.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
cd "$EDGEQ_TOP" || exit 1
UCD=${EDGEQ_UCD:-/usr/share/unicode}
[ -f "$UCD/UnicodeData.txt" ] && [ -f "$UCD/PropList.txt" ] ||
	skip_all "no Unicode Character Database in $UCD (Debian's unicode-data)"
tools/gen-unicode-table --ucd "$UCD" -o "$T/table.c"
check "the generator runs" test $? -eq 0
check "the committed table is the generated one" cmp -s "$T/table.c" userspace/lib/model/unicode_table.c
tools/gen-unicode-table --ucd "$T/none" -o "$T/x.c" 2>"$T/err"
check "no database: non-zero exit" test $? -ne 0
check "no database: names the package" grep -q "unicode-data" "$T/err"
summary
