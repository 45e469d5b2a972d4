#!/usr/bin/env python3
"""The layering of shared/src, checked: reads the layers from the ```layers block of
docs/architecture.md (one layer per line, highest first; the modules of a line are peers)
and fails on any import, outside test code, from a top-level module to one of a higher
layer, or of a module the block does not name.

Every path a file names is resolved as the compiler would before it is judged: `crate::`,
`super::` and `self::` paths, `use` trees (groups, `self`, `as` renames, globs), names a
`use` brought in (`use crate::http; ... http::ApiResponse`), and re-exports
(`crate::ApiError` is `error::ApiError`, `http::ApiResponse` is `http::response::ApiResponse`).

The ```sealed block of the same file names submodules and items some layers may not reach
even though they are lower (`usecases -> http::response`: use cases never build an
answer); any path that resolves to one of them, or into one, fails.

Last, no code outside `shared/src/store` may hold a DynamoDB key in a string literal: a key
attribute's name (`"PK"`, `"SK"`, `"GSI1PK"`...) or a key prefix (`"O#"`, `"#P#"`); the
store alone turns entities into rows and keys."""
import os, re, sys

ROOT = 'shared/src'
DOC = 'docs/architecture.md'
IDENT = r'[A-Za-z_][A-Za-z0-9_]*'


def layers():
    text = open(DOC).read()
    m = re.search(r'```layers\n(.*?)```', text, re.S)
    if not m:
        sys.exit(f'[layers] no ```layers block in {DOC}')
    rank = {}
    rows = [r.split('#')[0].split() for r in m.group(1).splitlines()]
    rows = [r for r in rows if r]
    for i, row in enumerate(rows):
        for name in row:
            rank[name] = len(rows) - i  # higher number = higher layer
    return rank, rows


def sealed():
    """(importing top-level modules, forbidden paths) per line of the ```sealed block."""
    m = re.search(r'```sealed\n(.*?)```', open(DOC).read(), re.S)
    rules = []
    for line in (m.group(1).splitlines() if m else []):
        line = line.split('#')[0]
        if '->' not in line:
            continue
        tops, paths = line.split('->')
        rules.append((set(tops.split()), [p.split('::') for p in paths.split()]))
    return rules


def module_of(rel):
    """`usecases/tree_patch/body.rs` -> ('usecases', 'tree_patch', 'body'); `mod.rs` names
    its folder, `lib.rs` the crate root ()."""
    parts = rel[:-3].split('/')
    if parts[-1] in ('mod', 'lib'):
        parts = parts[:-1]
    return tuple(parts)


def strip_tests(src):
    # A test module may reach anything: cut an inline `#[cfg(test)] mod ... {` to the end of
    # the file (test modules sit at the end by convention here). Other `#[cfg(test)]` items
    # are checked like the rest, and test modules of their own (`tests.rs`) are skipped.
    m = re.search(r'#\[cfg\(test\)\]\s*mod \w+\s*\{', src)
    return src if m is None else src[:m.start()]


def strip_comments(src):
    src = re.sub(r'/\*.*?\*/', '', src, flags=re.S)
    return re.sub(r'//[^\n]*', '', src)


STRING = re.compile(r'b?"(?:[^"\\]|\\.)*"', re.S)


def strip_strings(src):
    return STRING.sub('""', src)


def use_trees(src):
    """Each `use` declaration's (name it binds, path as written); a glob binds '*'."""
    out = []
    for m in re.finditer(r'\buse\s+([^;]*);', src):
        tokens = re.findall(r'\$?' + IDENT + r'|::|[{},*]', m.group(1))
        i = 0
        while i < len(tokens):
            found, i = expand(tokens, i, [])
            out.extend(found)
            while i < len(tokens) and tokens[i] == ',':
                i += 1
    return out


def expand(tokens, i, prefix):
    path = list(prefix)
    while i < len(tokens):
        tok = tokens[i]
        if tok == '{':
            i += 1
            found = []
            while i < len(tokens) and tokens[i] != '}':
                sub, i = expand(tokens, i, path)
                found.extend(sub)
                while i < len(tokens) and tokens[i] == ',':
                    i += 1
            return found, i + 1
        if tok == '*':
            return [('*', path)], i + 1
        if tok == '::':
            i += 1
            continue
        i += 1
        if tok == 'self' and path:
            seg = path
        else:
            seg = path + [tok]
        if i < len(tokens) and tokens[i] == '::':
            path = seg
            i += 1
            continue
        alias = seg[-1]
        if i + 1 < len(tokens) and tokens[i] == 'as':
            alias = tokens[i + 1]
            i += 2
        return [(alias, seg)], i
    return [], i


class Crate:
    def __init__(self):
        self.files = {}  # module -> (path, source without comments, tests and strings)
        for dp, _, fn in os.walk(ROOT):
            for f in sorted(fn):
                if not f.endswith('.rs') or f == 'tests.rs':
                    continue
                path = os.path.join(dp, f)
                rel = os.path.relpath(path, ROOT)
                src = strip_strings(strip_comments(strip_tests(open(path).read())))
                self.files[module_of(rel)] = (path, src)
        self.modules = set(self.files)
        # the names each module's `use` declarations bind (a re-export when public; a
        # private one is still what `super::name` reaches from a child module)
        self.uses = {m: use_trees(src) for m, (_, src) in self.files.items()}

    def absolute(self, module, path, depth=0):
        """`path` as written in `module`, from the crate root; None for another crate's."""
        if not path:
            return None
        head, rest = path[0], path[1:]
        if head in ('crate', '$crate'):
            return rest
        if head in ('super', 'self'):
            base = list(module)
            while path and path[0] in ('super', 'self'):
                if path[0] == 'super':
                    if not base:
                        return None
                    base.pop()
                path = path[1:]
            return base + path
        if module + (head,) in self.modules:
            return list(module) + path
        if depth < 8:
            for alias, target in self.uses.get(module, []):
                if alias == head:
                    resolved = self.absolute(module, target, depth + 1)
                    return None if resolved is None else resolved + rest
        return None

    def forms(self, path):
        """`path`, then each path it names through a re-export, to the item's own path
        (`http::ApiResponse`, `http::response::ApiResponse`)."""
        out = [path]
        for _ in range(16):
            for k in range(len(path)):
                owner = tuple(path[:k])
                if owner not in self.modules or tuple(path[:k + 1]) in self.modules:
                    continue
                target = next((t for a, t in self.uses[owner] if a == path[k]), None)
                if target is None:
                    continue
                resolved = self.absolute(owner, target)
                if resolved is not None and resolved != path[:k + 1]:
                    path = resolved + path[k + 1:]
                    out.append(path)
                    break
            else:
                return out
        return out

    def reached(self, module):
        """Every crate path `module`'s code names, resolved: each in all its forms; a glob's
        end in '*'."""
        src = self.files[module][1]
        out = []
        for alias, written in self.uses[module]:
            resolved = self.absolute(module, written)
            if resolved is not None:
                out.append([f + (['*'] if alias == '*' else []) for f in self.forms(resolved)])
        code = re.sub(r'\buse\s+[^;]*;', '', src)
        for m in re.finditer(r'(?<![A-Za-z0-9_:])(\$?' + IDENT + r'(?:\s*::\s*' + IDENT + r')+)', code):
            written = re.split(r'\s*::\s*', m.group(1))
            resolved = self.absolute(module, written)
            if resolved is not None:
                out.append(self.forms(resolved))
        return out


KEY_LITERAL = re.compile(r'^(?:PK|SK|GSI\d+(?:PK|SK)?)$|^[A-Z]{1,5}#|#[A-Z]{1,5}#')


def key_literals(path):
    """String literals of `path` (outside tests and comments) that spell a key."""
    src = strip_comments(strip_tests(open(path).read()))
    found = []
    for m in STRING.finditer(src):
        text = m.group(0)
        body = text[2:-1] if text.startswith('b') else text[1:-1]
        if KEY_LITERAL.search(body):
            found.append(text)
    return found


def main():
    rank, rows = layers()
    rules = sealed()
    crate = Crate()
    problems = []
    files = 0
    for module, (path, _) in sorted(crate.files.items()):
        if not module:
            continue  # lib.rs
        files += 1
        top = module[0]
        if top not in rank:
            problems.append(f'{path}: module `{top}` is in no layer of {DOC}')
            continue
        reached = crate.reached(module)
        seen = set()
        for tops, paths in rules:
            if top not in tops:
                continue
            for p in paths:
                for r in (f for forms in reached for f in forms):
                    glob = r and r[-1] == '*' and p[:len(r) - 1] == r[:-1]
                    if (r[:len(p)] == p or glob) and (tuple(p), path) not in seen:
                        seen.add((tuple(p), path))
                        problems.append(f'{path}: `{top}` reaches `{"::".join(p)}` (as `{"::".join(r)}`), sealed to it by {DOC}')
        for t in sorted({f[0] for forms in reached for f in forms if f and f[0] != top}):
            if t not in rank:
                continue  # an item of lib.rs, not a module
            if rank[t] > rank[top]:
                problems.append(f'{path}: `{top}` (layer {len(rows) - rank[top] + 1}) imports `{t}` (layer {len(rows) - rank[t] + 1}), a higher layer')
        if top != 'store':
            for lit in key_literals(path):
                problems.append(f'{path}: the key literal {lit} outside the store (keys and key attributes are the store\'s alone)')
    for p in problems:
        print(p)
    print(f'[layers] {files} files of {ROOT}, {len(rows)} layers, {len(rules)} sealed rules, {len(problems)} violations')
    sys.exit(1 if problems else 0)


# Each a way around the rules, written once into a copy of the tree: the check must name it.
SELF_TEST = [
    ('usecases/quotas.rs', 'use crate::http; fn f() -> http::ApiResponse { todo!() }', 'reaches `http::response`'),
    ('usecases/quotas.rs', 'use crate::http::{self as h}; fn f() -> h::ApiResponse { todo!() }', 'reaches `http::response`'),
    ('usecases/quotas.rs', 'fn f() -> crate::ApiError { todo!() }', 'reaches `error::ApiError`'),
    ('usecases/quotas.rs', 'fn f(_: crate::http::Query) {}', 'reaches `http::query`'),
    ('usecases/quotas.rs', 'use crate::http::*;', 'reaches `http::'),
    ('usecases/tree_patch/body.rs', 'use super::super::super::http::response::ApiResponse;', 'reaches `http::response`'),
    ('usecases/quotas.rs', 'fn f(_: &crate::App) {}', 'imports `app`'),
    ('store/items/mod.rs', 'fn f(_: &crate::Context) {}', 'imports `context`'),
    ('usecases/quotas.rs', 'fn k(o: &str) -> String { format!("O#{o}#P#x") }', 'the key literal "O#{o}#P#x"'),
    ('workers/feed/mod.rs', 'const K: &str = "GSI1PK";', 'the key literal "GSI1PK"'),
    ('api/lists.rs', 'use crate::search::snapshot as s;', 'reaches `search::snapshot`'),
]


def self_test():
    import shutil, subprocess, tempfile
    here = os.path.abspath(__file__)
    failed = 0
    for rel, code, expected in SELF_TEST:
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(ROOT, os.path.join(tmp, ROOT))
            os.makedirs(os.path.join(tmp, 'docs'))
            shutil.copy(DOC, os.path.join(tmp, DOC))
            with open(os.path.join(tmp, ROOT, rel), 'a') as f:
                f.write('\n' + code + '\n')
            run = subprocess.run([sys.executable, here], cwd=tmp, capture_output=True, text=True)
            if run.returncode == 0 or expected not in run.stdout:
                failed += 1
                print(f'[layers self-test] not refused: {code!r} in {rel}\n{run.stdout}')
    print(f'[layers self-test] {len(SELF_TEST) - failed} of {len(SELF_TEST)} ways around the rules refused')
    sys.exit(1 if failed else 0)


if '--self-test' in sys.argv:
    self_test()
main()
