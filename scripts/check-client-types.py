#!/usr/bin/env python3
"""Every request body and every 2xx answer of docs/openapi.yaml is typed in the generated
clients (scripts/clients.sh runs this; issue 60: a `oneOf` made POST /webhooks' body `Any`
in the Python client and its `WebhookCreate` model vanished, which broke every caller).

  check-client-types.py python DOCUMENT PACKAGE
      reads the Python client openapi-python-client generated (PACKAGE: the
      catalog_api_client folder) and fails, naming the operation, when a request body
      (`body:` of `_get_kwargs`) or a 2xx answer (what `_parse_response` builds for the
      status) is untyped: `Any`, `object`, `Unset` or `None` alone, `dict[str, Any]`, or a
      list of those; likewise each property of such a body's model whose schema has a type
      (a property the document leaves free-form, `{}` or an open object, may be `Any`), and
      each object schema of the document without a model class of its name.
  check-client-types.py typescript DOCUMENT OUT.ts
      writes type assertions over openapi-typescript's `operations` (schema.d.ts beside
      OUT.ts): tsc fails on each body or typed property that is `any`, `unknown`, `never`,
      `Record<string, never>` or an open map of those, with a message naming it.

DOCUMENT is read with ruamel.yaml, which the generator's virtualenv has (or as JSON)."""
import ast
import json
import re
import sys
from pathlib import Path

METHODS = ("get", "put", "post", "patch", "delete", "head", "options", "trace")
TYPED_KEYS = ("type", "$ref", "properties", "items", "oneOf", "anyOf", "allOf", "enum", "const")


def load(path):
    text = Path(path).read_text()
    try:
        from ruamel.yaml import YAML
    except ImportError:
        return json.loads(text)
    return YAML(typ="safe", pure=True).load(text)


def resolve(doc, node):
    """`node` with its `$ref`s followed (components only)."""
    for _ in range(32):
        if not isinstance(node, dict) or "$ref" not in node:
            return node
        ref = node["$ref"]
        if not ref.startswith("#/"):
            return node
        target = doc
        for part in ref[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def operations(doc):
    """(label, method, path, operation) of every operation, in the document's order."""
    for path, item in doc.get("paths", {}).items():
        for method in METHODS:
            op = item.get(method)
            if op is not None:
                label = f"{method.upper()} {path} ({op.get('operationId', '?')})"
                yield label, method, path, op


def json_schema(doc, holder):
    """The application/json schema of a request body or a response (None without one)."""
    holder = resolve(doc, holder) or {}
    media = (holder.get("content") or {}).get("application/json")
    return None if media is None else media.get("schema", {})


def bodies(doc, op):
    """(what, schema) of the operation's request body and 2xx answers with a JSON body."""
    if "requestBody" in op:
        schema = json_schema(doc, op["requestBody"])
        if schema is not None:
            yield "request body", schema
    for status, response in sorted(op.get("responses", {}).items()):
        status = str(status)
        if status.startswith("2"):
            schema = json_schema(doc, response)
            if schema is not None:
                yield f"answer {status}", schema


def free_form(doc, schema):
    """Whether the document leaves `schema` open: no type at all (`{}`, a description), an
    object with no properties whose other keys may be anything, or a list of those."""
    schema = resolve(doc, schema)
    if not isinstance(schema, dict) or not any(k in schema for k in TYPED_KEYS):
        return True
    if any(k in schema for k in ("$ref", "properties", "patternProperties", "oneOf", "anyOf", "allOf", "enum", "const")):
        return False
    types = schema.get("type")
    types = {types} if isinstance(types, str) else set(types or ())
    if types - {"null"} == {"object"}:
        # said open; a bare {"type": "object"} is `Record<string, never>` to openapi-typescript
        return schema.get("additionalProperties") in (True, {})
    if types - {"null"} == {"array"}:
        return free_form(doc, schema.get("items", {}))
    return False


def typed_properties(doc, schema):
    """{JSON name: schema} of the properties of an object schema that are not free-form."""
    schema = resolve(doc, schema) or {}
    props = schema.get("properties") or {}
    return {k: v for k, v in props.items() if not free_form(doc, v)}


# ---- Python -----------------------------------------------------------------------------


def members(node):
    """The members of a union annotation (`A | B`, `Union[A, B]`, `Optional[A]`)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return members(node.left) + members(node.right)
    if isinstance(node, ast.Subscript) and ast.unparse(node.value) in ("Union", "Optional"):
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return [m for e in elts for m in members(e)]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return members(ast.parse(node.value, mode="eval").body)
    return [node]


def untyped(node):
    """Why the annotation `node` is untyped, or None when it is typed."""
    if node is None:
        return "no annotation"
    kept = [m for m in members(node) if ast.unparse(m) not in ("None", "Unset", "UnsetType")]
    if not kept:
        return f"`{ast.unparse(node)}` alone"
    for m in kept:
        text = ast.unparse(m)
        if text in ("Any", "object", "dict", "list", "Mapping"):
            return f"`{text}`"
        if isinstance(m, ast.Subscript):
            outer = ast.unparse(m.value)
            args = m.slice.elts if isinstance(m.slice, ast.Tuple) else [m.slice]
            if outer in ("list", "List", "Sequence") and untyped(args[0]):
                return f"`{text}`"
            if outer in ("dict", "Dict", "Mapping") and untyped(args[-1]):
                return f"`{text}`"
    return None


class Package:
    def __init__(self, root):
        self.root = Path(root)
        self.modules = {}  # (method, path with {} for parameters) -> module AST
        for file in sorted((self.root / "api").glob("*/*.py")):
            tree = ast.parse(file.read_text())
            key = self.route(tree)
            if key is not None:
                self.modules[key] = tree
        self.classes = {}  # class name -> ClassDef of models/
        for file in sorted((self.root / "models").glob("*.py")):
            for node in ast.parse(file.read_text()).body:
                if isinstance(node, ast.ClassDef):
                    self.classes[node.name] = node

    @staticmethod
    def function(tree, name):
        return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)

    def route(self, tree):
        """The (method, path) of `_get_kwargs`' `_kwargs` literal."""
        kwargs = self.function(tree, "_get_kwargs")
        for node in ast.walk(kwargs) if kwargs else ():
            if isinstance(node, ast.Dict):
                pairs = {ast.literal_eval(k): v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)}
                if "method" in pairs and "url" in pairs:
                    url = pairs["url"]
                    if isinstance(url, ast.Call):  # "/webhooks/{id}".format(id=...)
                        url = url.func.value
                    return ast.literal_eval(pairs["method"]), normal(ast.literal_eval(url))
        return None

    def body_annotation(self, tree):
        kwargs = self.function(tree, "_get_kwargs")
        args = kwargs.args.args + kwargs.args.kwonlyargs
        arg = next((a for a in args if a.arg == "body"), None)
        return None if arg is None else arg.annotation

    def answer_annotation(self, tree, status):
        """The type `_parse_response` gives the answer of `status` (None: no branch)."""
        parse = self.function(tree, "_parse_response")
        for node in ast.walk(parse):
            if not (isinstance(node, ast.If) and ast.unparse(node.test) == f"response.status_code == {status}"):
                continue
            target = f"response_{status}"
            for inner in ast.walk(node):
                if isinstance(inner, ast.FunctionDef) and inner.name == f"_parse_response_{status}":
                    return inner.returns
            for inner in ast.walk(node):
                if isinstance(inner, ast.AnnAssign) and ast.unparse(inner.target) == target:
                    return inner.annotation
                if isinstance(inner, ast.Assign) and any(ast.unparse(t) == target for t in inner.targets):
                    value = inner.value
                    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "from_dict":
                        return value.func.value
                    if isinstance(value, ast.Call) and ast.unparse(value.func) == "cast":
                        return value.args[0]
                    if isinstance(value, ast.List):  # a list filled by a loop below
                        for loop in ast.walk(node):
                            if isinstance(loop, ast.Call) and ast.unparse(loop.func) == f"{target}.append":
                                item = ast.unparse(loop.args[0])
                                for a in ast.walk(node):
                                    if isinstance(a, ast.Assign) and ast.unparse(a.targets[0]) == item and isinstance(a.value, ast.Call) and isinstance(a.value.func, ast.Attribute) and a.value.func.attr == "from_dict":
                                        return ast.parse(f"list[{ast.unparse(a.value.func.value)}]", mode="eval").body
                        return ast.parse("list[Any]", mode="eval").body
                    return ast.parse("Any", mode="eval").body  # response.json() as it is
            return ast.parse("Any", mode="eval").body
        return None

    def why(self, annotation):
        """Why `annotation` is untyped, or None: `untyped`, or a model class (or a list of
        one) with no field but `additional_properties: dict[str, Any]`, which is what an
        object schema without properties generates."""
        why = untyped(annotation)
        for m in members(annotation) if why is None else ():
            if isinstance(m, ast.Subscript) and ast.unparse(m.value) in ("list", "List", "Sequence"):
                why = why or self.why(m.slice)
                continue
            cls = self.classes.get(ast.unparse(m))
            if cls is None or self.fields(cls.name):
                continue
            extra = [n for n in cls.body if isinstance(n, ast.AnnAssign) and ast.unparse(n.target) == "additional_properties"]
            if extra and untyped(extra[0].annotation):
                why = why or f"`{cls.name}` has no field, any keys: `{ast.unparse(extra[0].annotation)}`"
        return why

    def fields(self, name):
        """{JSON name: annotation} of the model class `name` (None: no such class)."""
        cls = self.classes.get(name)
        if cls is None:
            return None
        annotations = {n.target.id: n.annotation for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
        out = {}
        to_dict = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "to_dict"), None)
        for node in ast.walk(to_dict) if to_dict else ():
            # field_dict["changedFields"] = changed_fields / field_dict.update({"topics": topics})
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript) and ast.unparse(node.targets[0].value) == "field_dict":
                key = node.targets[0].slice
                if isinstance(key, ast.Constant) and isinstance(node.value, ast.Name) and node.value.id in annotations:
                    out[key.value] = annotations[node.value.id]
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "field_dict.update" and node.args and isinstance(node.args[0], ast.Dict):
                for k, v in zip(node.args[0].keys, node.args[0].values):
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Name) and v.id in annotations:
                        out[k.value] = annotations[v.id]
        return out


def normal(path):
    return re.sub(r"\{[^}]*\}", "{}", path)


def model_name(annotation):
    """The model class a (typed) annotation names directly, if it is one class."""
    kept = [m for m in members(annotation) if ast.unparse(m) not in ("None", "Unset")]
    if len(kept) == 1 and isinstance(kept[0], ast.Name):
        return kept[0].id
    return None


def check_python(doc, package):
    pkg = Package(package)
    failures = []
    for label, method, path, op in operations(doc):
        tree = pkg.modules.get((method, normal(path)))
        if tree is None:
            failures.append(f"{label}: no function in the Python client")
            continue
        for what, schema in bodies(doc, op):
            if what == "request body":
                annotation = pkg.body_annotation(tree)
                if annotation is None:
                    failures.append(f"{label}: {what}: no `body` parameter in the Python client")
                    continue
            else:
                annotation = pkg.answer_annotation(tree, what.split()[-1])
                if annotation is None:
                    failures.append(f"{label}: {what}: not parsed by the Python client")
                    continue
            why = pkg.why(annotation)
            if why:
                failures.append(f"{label}: {what} is untyped in the Python client ({why})")
                continue
            ref = schema.get("$ref", "")
            name = model_name(annotation)
            expected = ref.rsplit("/", 1)[-1] if ref.startswith("#/components/schemas/") else None
            target = resolve(doc, schema)
            if expected and "properties" in target and name != expected:
                failures.append(f"{label}: {what} is `{ast.unparse(annotation)}` in the Python client, not its schema's model `{expected}`")
            if name is None and target.get("type") == "array":  # list[Model]: the items' model
                kept = [m for m in members(annotation) if ast.unparse(m) not in ("None", "Unset")]
                if len(kept) == 1 and isinstance(kept[0], ast.Subscript) and ast.unparse(kept[0].value) == "list":
                    name, schema = model_name(kept[0].slice), target.get("items", {})
            fields = pkg.fields(name) if name else None
            if fields is None:
                continue
            for prop in typed_properties(doc, schema):
                if prop not in fields:
                    failures.append(f"{label}: {what}: `{name}` has no field for `{prop}`")
                elif pkg.why(fields[prop]):
                    failures.append(f"{label}: {what}: `{name}.{prop}` is untyped in the Python client ({pkg.why(fields[prop])})")
    for name, schema in doc.get("components", {}).get("schemas", {}).items():
        if schema.get("properties") and name not in pkg.classes:
            failures.append(f"schema {name}: no model class `{name}` in the Python client")
    return failures


# ---- TypeScript -------------------------------------------------------------------------

PRELUDE = """// Generated by scripts/check-client-types.py (make clients) and compiled by tsc beside
// smoke.ts: each line below fails to compile when the body it names is untyped in schema.d.ts.
import type { operations } from "./schema.js";

type IsAny<T> = 0 extends 1 & T ? true : false;
/** The keys of T other than an index signature. */
type Named<T> = keyof { [K in keyof T as string extends K ? never : number extends K ? never : K]: T[K] };
/** true when T (or a member of it) is any, unknown, never, an empty object or an open map of those. */
type Untyped<T> = IsAny<T> extends true ? true : unknown extends T ? true : [NonNullable<T>] extends [never] ? true : Open<NonNullable<T>>;
type Open<T> = T extends readonly (infer E)[]
  ? Untyped<E>
  : T extends object
    ? [Named<T>] extends [never]
      ? string extends keyof T ? Untyped<T[string]> : true
      : false
    : false;
type Check<Name extends string, T> = true extends Untyped<T> ? `${Name} is untyped in the TypeScript types` : true;
type Op<K extends keyof operations> = operations[K];
type Json<H> = H extends { content: { "application/json": infer B } } ? B : never;
type Body<O> = O extends { requestBody?: infer R } ? Json<NonNullable<R>> : never;
type Answer<O, S> = O extends { responses: infer R } ? (S extends keyof R ? Json<R[S]> : never) : never;
type Prop<T, K> = K extends keyof NonNullable<T> ? NonNullable<T>[K] : never;
"""


def check_typescript(doc, out):
    lines = [PRELUDE]
    n = 0

    def emit(name, expr):
        nonlocal n
        lines.append(f"export const c{n}: Check<{json.dumps(name)}, {expr}> = true;")
        n += 1

    for label, _method, _path, op in operations(doc):
        opid = op.get("operationId")
        if not opid:
            sys.exit(f"[clients] {label}: no operationId, which the TypeScript check needs")
        for what, schema in bodies(doc, op):
            body = f"Body<Op<{json.dumps(opid)}>>" if what == "request body" else f"Answer<Op<{json.dumps(opid)}>, {what.split()[-1]}>"
            emit(f"{label}: {what}", body)
            for prop in typed_properties(doc, schema):
                emit(f"{label}: {what}: property {prop}", f"Prop<{body}, {json.dumps(prop)}>")
    Path(out).write_text("\n".join(lines) + "\n")
    return []


def main(argv):
    if len(argv) != 4 or argv[1] not in ("python", "typescript"):
        sys.exit(__doc__)
    doc = load(argv[2])
    failures = check_python(doc, argv[3]) if argv[1] == "python" else check_typescript(doc, argv[3])
    for f in failures:
        print(f"[clients] untyped: {f}", file=sys.stderr)
    if failures:
        print(f"[clients] {len(failures)} untyped bodies or models in the {argv[1].title()} client: "
              "give each schema a shape the generators type (an object, not a top-level oneOf of "
              "`required` lists; see WebhookCreate in shared/src/api/webhooks/destination.rs)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
