# Shared by the edgeq bench tests (source it): testlib, the validator's
# directory D, the model generator GEN (skips without it), the SCHEMA and
# the profiles file.
. "$(dirname "$0")/../lib/testlib.sh"
D=$EDGEQ_TOP/tests/ledger
GEN=$EDGEQ_TOP/${O:-build}/tools/gguf-gen
SCHEMA=$EDGEQ_TOP/Documentation/bench.schema.json
[ -x "$GEN" ] || skip_all "no $GEN (the decoder's model generator is not built)"
export EDGEQ_PROFILES=$EDGEQ_TOP/share/edgeq/profiles.ini
