#!/usr/bin/env bash
# timeout: 600
# Every chat template of real published models in ../shared/templates (and
# the feature templates under tests/template/cases/), rendered by
# `edgeq template` for every conversation in tests/template/conv/ with
# add_generation_prompt off and on, must be byte-identical to Jinja2 as
# transformers configures it (tests/template/ref_render.py on Debian's
# python3-jinja2). Where Jinja2 refuses (syntax error, raise_exception,
# undefined, sandbox), edgeq must refuse too: exit 3, and a raise_exception
# message must be the template's own.
. "$(dirname "$0")/../lib/testlib.sh"
cd "$EDGEQ_TOP" || exit 1
TDIR=${EDGEQ_TEST_TEMPLATES:-$EDGEQ_TOP/../shared/templates}
PY=/usr/bin/python3
$PY -c 'import jinja2' 2>/dev/null || skip_all "python3-jinja2 is not installed (tools/install-deps)"
[ -x "$EDGEQ" ] || skip_all "$EDGEQ is not built"
NOW=2026-08-15
templates=(tests/template/cases/*.jinja)
if [ -d "$TDIR" ]; then
	templates+=("$TDIR"/*.jinja)
else
	echo "note: $TDIR is absent: only the feature templates are compared"
fi
mkdir -p "$T/ref"
$PY tests/template/ref_render.py --batch "$T/ref" "$NOW" "${templates[@]}" -- \
	tests/template/conv/*.json || { check "reference renderer runs" false; summary; exit 1; }

RENDER=$EDGEQ_TOP/${O:-build}/tools/template-render
[ -x "$RENDER" ] || skip_all "$RENDER is not built"
mkdir -p "$T/got"
"$RENDER" "$T/got" "$NOW" "${templates[@]}" -- tests/template/conv/*.json ||
	check "template-render runs" false

# The command itself, once per template (conversations in turn): the same
# bytes on stdout, or exit 3 with the raise_exception message on stderr.
convs=(tests/template/conv/*.json)
cli() { # template index
	local tp=$1 cp=${convs[$(($2 % ${#convs[@]}))]} tn cn base rc
	tn=${tp##*/} cn=${cp##*/}
	tn=${tn%.jinja} cn=${cn%.json}
	base=$T/ref/$tn.$cn.1
	"$EDGEQ" template --template "$tp" --messages "$cp" --add-generation-prompt \
		--bos '<s>' --eos '</s>' --now "$NOW" >"$T/out" 2>"$T/err"
	rc=$?
	if [ -f "$base.out" ]; then
		[ $rc = 0 ] && cmp -s "$T/out" "$base.out" && return 0
	elif [ $rc = 3 ] && [ ! -s "$T/out" ]; then
		grep -q '^TemplateError: ' "$base.err" || return 0
		grep -qF -- "$(sed -n '1s/^TemplateError: //p' "$base.err")" "$T/err" && return 0
	fi
	echo "  edgeq template $tn $cn: exit $rc: $(head -c 300 "$T/err")"
	return 1
}

$PY tests/template/ref_render.py --compare "$T/ref" "$T/got" >"$T/cmp" ||
	check "comparison runs" false
declare -A path
for x in "${templates[@]}"; do
	x_name=${x##*/}
	path[${x_name%.jinja}]=$x
done
total=0 k=0
while read -r verdict tn n; do
	case $verdict in
	ok | FAIL) ;;
	*) continue ;;
	esac
	ok=1
	[ "$verdict" = ok ] || { ok=0; awk -v t="$tn" '$2 == t {p = 1; next} /^(ok|FAIL) / {p = 0} p' "$T/cmp"; }
	cli "${path[$tn]}" $k || ok=0
	k=$((k + 1))
	total=$((total + n))
	check "$tn: $n renders as Jinja2 renders them" [ $ok = 1 ]
done <"$T/cmp"
[ $k = ${#templates[@]} ] || check "every template compared ($k of ${#templates[@]})" false
echo "$total renders compared"
summary
