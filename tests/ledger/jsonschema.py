#!/usr/bin/env python3
"""A small JSON Schema validator (the subset edgeq's schemas use: type,
const, enum, properties, required, additionalProperties, items, minItems,
minLength, minimum, maximum, exclusiveMinimum, pattern, anyOf). No pip.
Usage: jsonschema.py SCHEMA DOCUMENT   (exit 0 valid, 1 invalid)"""
import json
import re
import sys

TYPES = {"object": dict, "array": list, "string": str, "boolean": bool,
         "null": type(None)}


def is_type(v, t):
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, TYPES[t])


def validate(v, s, path="$"):
    errs = []
    if "type" in s:
        ts = s["type"] if isinstance(s["type"], list) else [s["type"]]
        if not any(is_type(v, t) for t in ts):
            return ["%s: %r is not of type %s" % (path, v, ts)]
    if "const" in s and v != s["const"]:
        errs.append("%s: %r is not %r" % (path, v, s["const"]))
    if "enum" in s and v not in s["enum"]:
        errs.append("%s: %r not in %r" % (path, v, s["enum"]))
    if "anyOf" in s:
        if not any(not validate(v, sub, path) for sub in s["anyOf"]):
            errs.append("%s: matches none of anyOf" % path)
    if is_type(v, "number"):
        if "minimum" in s and v < s["minimum"]:
            errs.append("%s: %r < minimum %r" % (path, v, s["minimum"]))
        if "maximum" in s and v > s["maximum"]:
            errs.append("%s: %r > maximum %r" % (path, v, s["maximum"]))
        if "exclusiveMinimum" in s and v <= s["exclusiveMinimum"]:
            errs.append("%s: %r <= exclusiveMinimum %r" % (path, v, s["exclusiveMinimum"]))
    if isinstance(v, str):
        if "minLength" in s and len(v) < s["minLength"]:
            errs.append("%s: shorter than %d" % (path, s["minLength"]))
        if "pattern" in s and not re.search(s["pattern"], v):
            errs.append("%s: %r does not match %s" % (path, v, s["pattern"]))
    if isinstance(v, dict):
        props = s.get("properties", {})
        for k in s.get("required", []):
            if k not in v:
                errs.append("%s: missing required %r" % (path, k))
        for k, sub in v.items():
            if k in props:
                errs += validate(sub, props[k], "%s.%s" % (path, k))
            elif s.get("additionalProperties") is False:
                errs.append("%s: unexpected property %r" % (path, k))
            elif isinstance(s.get("additionalProperties"), dict):
                errs += validate(sub, s["additionalProperties"], "%s.%s" % (path, k))
    if isinstance(v, list):
        if "minItems" in s and len(v) < s["minItems"]:
            errs.append("%s: fewer than %d items" % (path, s["minItems"]))
        if "items" in s:
            for i, sub in enumerate(v):
                errs += validate(sub, s["items"], "%s[%d]" % (path, i))
    return errs


def main():
    schema = json.load(open(sys.argv[1]))
    doc = json.load(open(sys.argv[2]))
    errs = validate(doc, schema)
    for e in errs:
        print(e)
    sys.exit(1 if errs else 0)


if __name__ == "__main__":
    main()
