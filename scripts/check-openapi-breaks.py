#!/usr/bin/env python3
"""docs/openapi.yaml against the last release's document, docs/openapi-release.yaml: fails on
each change that breaks a client built against that release (the generated Python and
TypeScript clients above all: a model class or a function that goes, a field that changes
type), unless docs/openapi-breaks.txt lists it with the reason it is intended.

Each break is one line, `<kind> <where>: <detail>`; its `<kind> <where>` is what the
allow-list names. The kinds:

  schema-removed <Name>               a component schema removed or renamed (its model goes)
  operation-removed <METHOD> <path>   an operation (or `webhook <name>`) removed
  operation-renamed <METHOD> <path>   its operationId or first tag changed (the generated
                                      function's name or module)
  response-removed <op> <status>      a 2xx answer with a JSON body is gone
  response-property-removed <where>   a property of an answer (or a webhook payload) removed
  response-property-optional <where>  a property an answer always had is no longer required
  request-property-removed <where>    a property a request body took removed
  parameter-removed <op> parameter <in>.<name>
  required-added <where>              a new required request property or parameter, an
                                      optional one now required, a body now required
  type-narrowed <where>               a property's, parameter's or body's types, enum or
                                      const no longer cover all they did; in a request also
                                      a tighter bound (maxLength, maximum, minItems...)
  untyped <where>                     a body or property the generators typed no longer is:
                                      no type, an object without properties, or a top-level
                                      oneOf/anyOf with an untyped member (WebhookCreate's
                                      `oneOf` of `required` lists, issue 60)

<where> is `schemas.<Name>.<property>...` inside a component schema (`[]`: an array's
items, `{}`: a map's values), `parameters.<name>` for a component parameter, else
`<METHOD> <path> request` or `<METHOD> <path> <status>` and the property path.

  check-openapi-breaks.py              the check (scripts/test.sh runs it)
  check-openapi-breaks.py --self-test  mutates a copy of the document in each of those
                                       ways and fails unless each break is named
  check-openapi-breaks.py --release    when a release is cut: the document becomes the
                                       baseline and the allow-list is emptied

Needs PyYAML (the .tools/openapi virtualenv of scripts/check-openapi.sh has it)."""
import copy
import json
import sys
from pathlib import Path

BASELINE = Path("docs/openapi-release.yaml")
DOCUMENT = Path("docs/openapi.yaml")
ALLOW = Path("docs/openapi-breaks.txt")
METHODS = ("get", "put", "post", "patch", "delete", "head", "options", "trace")
ALL = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})
UPPER = ("maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum")
LOWER = ("minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum")
HEADER = """\
# The OpenAPI document of the last release: scripts/check-openapi-breaks.py fails on a change
# of docs/openapi.yaml that breaks its clients (README, the OpenAPI document and its clients).
# Written by `check-openapi-breaks.py --release` when a release is cut; do not edit.
"""


def load(path):
    import yaml  # PyYAML, from the virtualenv that runs this

    return yaml.safe_load(Path(path).read_text())


def deref(doc, node):
    """(component name or None, node with its `$ref` followed)."""
    name = None
    for _ in range(32):
        if not isinstance(node, dict) or not str(node.get("$ref", "")).startswith("#/"):
            return name, node
        parts = node["$ref"][2:].split("/")
        name = parts[-1]
        node = doc
        for part in parts:
            node = node.get(part.replace("~1", "/").replace("~0", "~"), {})
    return name, node


def listed(value):
    return [value] if isinstance(value, str) else list(value or [])


def kind(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}[type(value)]


def types(doc, schema, depth=0):
    """The JSON types `schema` admits."""
    _, s = deref(doc, schema)
    if not isinstance(s, dict) or depth > 16:
        return ALL if s is not False else frozenset()
    found = set(ALL)
    if "type" in s:
        found &= set(listed(s["type"])) | ({"integer"} if "number" in listed(s["type"]) else set())
    if "const" in s:
        found &= {kind(s["const"])}
    if "enum" in s:
        found &= {kind(v) for v in s["enum"]}
    union = s.get("oneOf") or s.get("anyOf")
    if union:
        found &= set().union(*(types(doc, m, depth + 1) for m in union))
    for m in s.get("allOf") or ():
        found &= types(doc, m, depth + 1)
    return frozenset(found)


def values(doc, schema, depth=0):
    """The literal values `schema` admits (JSON texts), or None when not a closed list."""
    _, s = deref(doc, schema)
    if not isinstance(s, dict) or depth > 16:
        return None
    if "const" in s:
        return {json.dumps(s["const"], sort_keys=True)}
    if "enum" in s:
        return {json.dumps(v, sort_keys=True) for v in s["enum"]}
    union = s.get("oneOf") or s.get("anyOf")
    if union:
        each = [values(doc, m, depth + 1) for m in union]
        return None if any(v is None for v in each) else set().union(*each)
    return None


def untyped(doc, schema, depth=0):
    """Whether the generators make `schema` untyped (`Any`, `dict[str, Any]`, `unknown`,
    `Record<string, never>`)."""
    _, s = deref(doc, schema)
    if not isinstance(s, dict):
        return True
    if depth > 16:
        return False
    union = s.get("oneOf") or s.get("anyOf")
    if union:  # a union of its members; the properties beside it are ignored
        return any(untyped(doc, m, depth + 1) for m in union)
    if s.get("allOf") and not s.get("properties") and "type" not in s:
        return all(untyped(doc, m, depth + 1) for m in s["allOf"])
    if s.get("properties") or s.get("patternProperties") or "enum" in s or "const" in s:
        return False
    t = set(listed(s.get("type"))) - {"null"}
    if not t:
        return True
    if t == {"array"}:
        return "items" not in s or untyped(doc, s["items"], depth + 1)
    if t == {"object"}:
        extra = s.get("additionalProperties")
        return not isinstance(extra, dict) or not extra or untyped(doc, extra, depth + 1)
    return False


def body_schema(doc, holder):
    """The application/json schema of a request body or a response (None without one)."""
    _, holder = deref(doc, holder)
    media = ((holder or {}).get("content") or {}).get("application/json")
    return None if media is None else media.get("schema", {})


class Compare:
    def __init__(self, old, new):
        self.old, self.new = old, new
        self.breaks = {}  # "kind where" -> detail
        self.seen = set()
        self.schemas()
        for where, o, n in self.operations():
            self.operation(where, o, n)
        for name, item in (old.get("webhooks") or {}).items():
            for method in METHODS:
                if method not in item:
                    continue
                nop = ((new.get("webhooks") or {}).get(name) or {}).get(method)
                if nop is None:
                    self.add("operation-removed", f"webhook {name}", "a webhook the API sends")
                    continue
                o = body_schema(old, item[method].get("requestBody", {}))
                n = body_schema(new, nop.get("requestBody", {}))
                if o is not None:  # what receivers parse: an answer to them
                    self.body(o, n, f"webhook {name}", "response")

    def add(self, kind, where, detail):
        self.breaks.setdefault(f"{kind} {where}", detail)

    def schemas(self):
        old = (self.old.get("components") or {}).get("schemas") or {}
        new = (self.new.get("components") or {}).get("schemas") or {}
        added = sorted(set(new) - set(old))
        for name in sorted(set(old) - set(new)):
            hint = f" (new schemas: {', '.join(added)})" if added else ""
            self.add("schema-removed", name, f"removed or renamed{hint}")

    def operations(self):
        for path, item in (self.old.get("paths") or {}).items():
            for method in METHODS:
                if method in item:
                    nitem = (self.new.get("paths") or {}).get(path) or {}
                    yield f"{method.upper()} {path}", (item, item[method]), (nitem, nitem.get(method))

    def operation(self, where, o, n):
        (oitem, oop), (nitem, nop) = o, n
        if nop is None:
            self.add("operation-removed", where, f"operationId {oop.get('operationId')}")
            return
        before = (oop.get("operationId"), (oop.get("tags") or [None])[0])
        after = (nop.get("operationId"), (nop.get("tags") or [None])[0])
        if before != after:
            self.add("operation-renamed", where, f"operationId {before[0]} (tag {before[1]}) is now {after[0]} (tag {after[1]})")
        self.parameters(where, (oitem, oop), (nitem, nop))
        orb, nrb = oop.get("requestBody"), nop.get("requestBody")
        ob = body_schema(self.old, orb) if orb else None
        nb = body_schema(self.new, nrb) if nrb else None
        if ob is not None:
            self.body(ob, nb, f"{where} request", "request")
        if nb is not None and deref(self.new, nrb)[1].get("required") and not (ob is not None and deref(self.old, orb)[1].get("required")):
            self.add("required-added", f"{where} request", "the body is now required")
        for status, response in (oop.get("responses") or {}).items():
            if not str(status).startswith("2"):
                continue
            ob = body_schema(self.old, response)
            if ob is None:
                continue
            nresponse = (nop.get("responses") or {}).get(status)
            nb = body_schema(self.new, nresponse) if nresponse is not None else None
            if nb is None:
                self.add("response-removed", f"{where} {status}", "no such answer with a JSON body any more")
                continue
            self.body(ob, nb, f"{where} {status}", "response")

    def body(self, o, n, where, ctx):
        if n is None:
            self.add("untyped", where, "no JSON body any more")
        elif not untyped(self.old, o) and untyped(self.new, n):
            self.add("untyped", where, "typed by the generators in the release, untyped now")
        else:
            self.schema(o, n, where, ctx)

    def parameters(self, where, o, n):
        def collect(doc, item, op):
            out = {}
            for p in (item.get("parameters") or []) + (op.get("parameters") or []):
                name, p = deref(doc, p)
                out[(p.get("in"), p.get("name"))] = (name, p)
            return out

        old, new = collect(self.old, *o), collect(self.new, *n)
        for key, (oname, op) in old.items():
            here = f"{where} parameter {key[0]}.{key[1]}"
            if key not in new:
                self.add("parameter-removed", here, "gone")
                continue
            nname, np = new[key]
            here = f"parameters.{oname}" if oname and oname == nname else here
            if np.get("required") and not op.get("required"):
                self.add("required-added", here, "now required")
            self.schema(op.get("schema", {}), np.get("schema", {}), here, "request")
        for key, (nname, np) in new.items():
            if key not in old and np.get("required"):
                where_new = f"parameters.{nname}" if nname else f"{where} parameter {key[0]}.{key[1]}"
                self.add("required-added", where_new, "a new required parameter")

    def schema(self, o, n, where, ctx):
        oname, os = deref(self.old, o)
        nname, ns = deref(self.new, n)
        if oname is not None:
            where = f"schemas.{oname}"
            if (oname, nname, ctx) in self.seen:
                return
            self.seen.add((oname, nname, ctx))
        if not isinstance(os, dict) or not isinstance(ns, dict):
            return
        # a list's or a map's untyped items are named where they are (`schemas.Item`), once
        inner = any(isinstance(os.get(k), dict) and isinstance(ns.get(k), dict) for k in ("items", "additionalProperties"))
        if not inner and not untyped(self.old, os) and untyped(self.new, ns):
            self.add("untyped", where, "typed by the generators in the release, untyped now")
            return
        self.narrowed(os, ns, where, ctx)
        oprops, nprops = os.get("properties") or {}, ns.get("properties") or {}
        for prop, sub in oprops.items():
            if prop in nprops:
                self.schema(sub, nprops[prop], f"{where}.{prop}", ctx)
            elif ctx == "response":
                self.add("response-property-removed", f"{where}.{prop}", "gone from the answer")
            else:
                self.add("request-property-removed", f"{where}.{prop}", "the body no longer takes it")
        oreq, nreq = set(os.get("required") or ()), set(ns.get("required") or ())
        if ctx == "request":
            for prop in sorted(nreq - oreq):
                self.add("required-added", f"{where}.{prop}", "now required")
        else:
            for prop in sorted(oreq - nreq):
                if prop in nprops:
                    self.add("response-property-optional", f"{where}.{prop}", "no longer always there")
        if isinstance(os.get("items"), dict) and isinstance(ns.get("items"), dict):
            self.schema(os["items"], ns["items"], f"{where}[]", ctx)
        oextra, nextra = os.get("additionalProperties"), ns.get("additionalProperties")
        if isinstance(oextra, dict) and isinstance(nextra, dict):
            self.schema(oextra, nextra, f"{where}{{}}", ctx)

    def narrowed(self, os, ns, where, ctx):
        lost = types(self.old, os) - types(self.new, ns)
        if lost:
            self.add("type-narrowed", where, f"no longer {', '.join(sorted(lost))}")
            return
        ov, nv = values(self.old, os), values(self.new, ns)
        if nv is not None and (ov is None or ov - nv):
            gone = "anything else" if ov is None else ", ".join(sorted(ov - nv))
            self.add("type-narrowed", where, f"no longer admits {gone}")
            return
        if ctx != "request":
            return
        for bound in UPPER + LOWER:
            before, after = os.get(bound), ns.get(bound)
            if isinstance(after, (int, float)) and not isinstance(after, bool):
                tighter = before is None or (after < before if bound in UPPER else after > before)
                if tighter:
                    self.add("type-narrowed", where, f"{bound} {before} is now {after}")
                    return


def allowed(path):
    """{`kind where`: reason} of the allow-list; exits on a line without a reason."""
    out = {}
    if not Path(path).exists():
        return out
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, _, reason = line.partition(" # ")
        if not reason.strip():
            sys.exit(f"[openapi-breaks] {path}:{number}: no reason: write `<kind> <where> # <why this break is intended>`")
        out[key.strip()] = reason.strip()
    return out


def verdict(breaks, allow):
    """The lines to fail on: breaks not allowed, and allow-list lines no break matches."""
    out = [f"{key}: {detail}" for key, detail in sorted(breaks.items()) if key not in allow]
    out += [f"{key}: listed in {ALLOW} but no such break (remove the line)" for key in sorted(allow) if key not in breaks]
    return out


def check():
    old, new = load(BASELINE), load(DOCUMENT)
    allow = allowed(ALLOW)
    breaks = Compare(old, new).breaks
    failures = verdict(breaks, allow)
    for f in failures:
        print(f"[openapi-breaks] {f}", file=sys.stderr)
    if failures:
        print(f"[openapi-breaks] {len(failures)} problems: {DOCUMENT} breaks clients built against the last release "
              f"({BASELINE}). Undo the change, or, when the break is intended and reviewed, add its "
              f"`<kind> <where> # <reason>` line to {ALLOW}", file=sys.stderr)
        return 1
    print(f"[openapi-breaks] {DOCUMENT} keeps every client of the last release working"
          + (f" ({len(allow)} intended breaks allowed)" if allow else ""), file=sys.stderr)
    return 0


def release():
    text = DOCUMENT.read_text()
    BASELINE.write_text(HEADER + "".join(l for l in text.splitlines(True) if not l.startswith("# Generated")))
    kept = [l for l in ALLOW.read_text().splitlines(True) if not l.strip() or l.lstrip().startswith("#")] if ALLOW.exists() else []
    ALLOW.write_text("".join(kept))
    print(f"[openapi-breaks] {BASELINE} is now {DOCUMENT}; {ALLOW} has no entries", file=sys.stderr)
    return 0


def rename_schema(doc, old, new):
    """Renames a component schema and every reference to it, in place."""
    text = json.dumps(doc).replace(f'"#/components/schemas/{old}"', f'"#/components/schemas/{new}"')
    renamed = json.loads(text)
    renamed["components"]["schemas"][new] = renamed["components"]["schemas"].pop(old)
    doc.clear()
    doc.update(renamed)


def json_of(doc, path, method, status=None):
    op = doc["paths"][path][method]
    holder = op["responses"][status] if status else op["requestBody"]
    return holder["content"]["application/json"]


def mutations():
    """(what, mutation in place, the break it must name)."""
    S = lambda d: d["components"]["schemas"]  # noqa: E731
    P = lambda d: d["components"]["parameters"]  # noqa: E731

    def set_(target, key, value):
        target[key] = value

    return [
        ("a schema renamed", lambda d: rename_schema(d, "WebhookCreate", "WebhookCreateBody"),
         "schema-removed WebhookCreate"),
        ("an operation removed", lambda d: d["paths"]["/webhooks"].pop("post"), "operation-removed POST /webhooks"),
        ("an operation renamed", lambda d: set_(d["paths"]["/products"]["get"], "operationId", "listProducts"),
         "operation-renamed GET /products"),
        ("an answer's property removed", lambda d: S(d)["Webhook"]["properties"].pop("url"),
         "response-property-removed schemas.Webhook.url"),
        ("a request property's type narrowed", lambda d: set_(S(d)["WebhookPatch"]["properties"]["description"], "type", "string"),
         "type-narrowed schemas.WebhookPatch.description"),
        ("a parameter's enum narrowed", lambda d: set_(P(d)["search_mode"]["schema"], "enum", ["all"]),
         "type-narrowed parameters.search_mode"),
        ("a parameter's bound narrowed", lambda d: set_(P(d)["limit"]["schema"], "maximum", 100),
         "type-narrowed parameters.limit"),
        ("a new required request property", lambda d: S(d)["WebhookCreate"]["required"].append("enabled"),
         "required-added schemas.WebhookCreate.enabled"),
        ("a parameter now required", lambda d: set_(P(d)["limit"], "required", True), "required-added parameters.limit"),
        ("a request body untyped (issue 60's oneOf)",
         lambda d: set_(S(d)["WebhookCreate"], "oneOf", [{"required": ["url"]}, {"required": ["destination"]}]),
         "untyped POST /webhooks request"),
        ("an answer untyped", lambda d: set_(json_of(d, "/webhooks/{id}", "get", "200"), "schema", {"type": "object"}),
         "untyped GET /webhooks/{id} 200"),
        ("an answer's property untyped", lambda d: set_(S(d), "Webhook", {"description": "anything"}),
         "untyped schemas.Webhook"),
    ]


def self_test():
    base = load(DOCUMENT)
    failures = []
    if Compare(base, base).breaks:
        failures.append(f"the document against itself: {sorted(Compare(base, base).breaks)}")
    harmless = copy.deepcopy(base)
    harmless["components"]["schemas"]["Webhook"]["properties"]["note"] = {"type": "string"}
    harmless["components"]["schemas"]["WebhookPatch"]["properties"]["note"] = {"type": "string"}
    harmless["components"]["schemas"]["WebhookPatch"]["description"] = "changed"
    harmless["components"]["parameters"]["limit"]["schema"]["maximum"] = 500
    if Compare(base, harmless).breaks:
        failures.append(f"additions and a wider bound taken for breaks: {sorted(Compare(base, harmless).breaks)}")
    for what, mutate, expected in mutations():
        doc = copy.deepcopy(base)
        try:
            mutate(doc)
        except (KeyError, IndexError, TypeError) as e:
            failures.append(f"{what}: the self-test's target is not in the document ({e!r}): pick another")
            continue
        breaks = Compare(base, doc).breaks
        if expected not in breaks:
            failures.append(f"{what}: `{expected}` not named (named: {sorted(breaks) or 'nothing'})")
            continue
        if verdict(breaks, {expected: "intended"}) != [f"{k}: {v}" for k, v in sorted(breaks.items()) if k != expected]:
            failures.append(f"{what}: the allow-list line did not silence it")
    if verdict({}, {"untyped GET /nowhere 200": "gone"}) == []:
        failures.append("a stale allow-list line was not reported")
    for f in failures:
        print(f"[openapi-breaks] self-test: {f}", file=sys.stderr)
    if failures:
        return 1
    print(f"[openapi-breaks] self-test: each of {len(mutations())} breaking mutations named, the allow-list honoured", file=sys.stderr)
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if args == ["--self-test"]:
        sys.exit(self_test())
    if args == ["--release"]:
        sys.exit(release())
    if args:
        sys.exit(__doc__)
    sys.exit(check())
