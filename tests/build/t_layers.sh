#!/usr/bin/env bash
# The server's files call each other one way (issue 15: server.c and
# local.c called each other): tools/file-cycles finds no circle among
# userspace/lib/server's exported srv_* functions, and does find one when
# two files call each other.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
cd "$EDGEQ_TOP" || exit 1
out=$(tools/file-cycles userspace/lib/server srv_ 2>&1)
check "userspace/lib/server: no call cycle between files ($(grep cycle: <<<"$out" | head -n 3))" test $? -eq 0
check "  ... the graph was read (server.c calls local.c)" grep -q '^server.c -> .*local.c' <<<"$out"
check "  ... local.c calls nothing of server.c" bash -c '! grep -q "^local.c -> .*server.c" <<<"$1"' _ "$out"
# the engine: the session calls the pressure watch, which reaches the
# session only through the callbacks it was given (it called the public
# session API back before)
out=$(tools/file-cycles userspace/lib/engine edgeq_,eng_ 2>&1)
check "userspace/lib/engine: no call cycle between files ($(grep cycle: <<<"$out" | head -n 3))" test $? -eq 0
check "  ... the graph was read (session.c calls watch.c)" grep -q '^session.c -> .*watch.c' <<<"$out"
mkdir -p "$T/c"
printf 'int srv_a(void)\n{\n\treturn srv_b();\n}\n' >"$T/c/a.c"
printf 'int srv_b(void)\n{\n\treturn srv_c();\n}\n' >"$T/c/b.c"
printf 'int srv_c(void)\n{\n\treturn srv_a();\n}\n' >"$T/c/c.c"
out=$(tools/file-cycles "$T/c" srv_ 2>&1)
check "a three-file circle: exit 1" test $? -eq 1
check "  ... printed as a path" grep -q '^cycle: a.c -> b.c -> c.c -> a.c' <<<"$out"
printf 'int srv_c(void)\n{\n\treturn 0;\n}\n' >"$T/c/c.c"
tools/file-cycles "$T/c" srv_ >/dev/null 2>&1
check "  ... broken: exit 0" test $? -eq 0
tools/file-cycles "$T/none" srv_ >/dev/null 2>&1
check "no such directory: fails" test $? -ne 0
summary
