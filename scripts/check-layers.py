#!/usr/bin/env python3
"""The layering of shared/src, checked: reads the layers from the ```layers block of
docs/architecture.md (one layer per line, highest first; the modules of a line are peers)
and fails on any import, outside test code, from a top-level module to one of a higher
layer, or of a module the block does not name. `use crate::...`, `use crate::{...}`
groups, `super::` paths that leave the module and qualified paths are all counted.

The ```sealed block of the same file names submodules some layers may not reach even
though they are lower (`api usecases -> store::keys store::ops`: keys and raw requests are
the store's alone); any `crate::` path to them from a file of those modules fails."""
import os, re, sys

ROOT = 'shared/src'
DOC = 'docs/architecture.md'


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
        rules.append((set(tops.split()), paths.split()))
    return rules


def reaches(src, path):
    """Whether `src` names `crate::<path>` (directly, or as a member of a `{...}` group)."""
    head, _, last = path.rpartition('::')
    direct = re.search(r'\bcrate::' + path.replace('::', r'\s*::\s*') + r'\b', src)
    group = head and re.search(r'\bcrate::' + head.replace('::', r'\s*::\s*') + r'\s*::\s*\{[^}]*\b' + last + r'\b', src, re.S)
    return bool(direct or group)


def top_of(rel):
    parts = rel[:-3].split('/')
    if parts[0] == 'lib':
        return None
    return parts[0]


def strip_tests(src):
    # A test module may reach anything: cut an inline `#[cfg(test)] mod ... {` to the end of
    # the file (test modules sit at the end by convention here). Other `#[cfg(test)]` items
    # are checked like the rest, and test modules of their own (`tests.rs`) are skipped.
    m = re.search(r'#\[cfg\(test\)\]\s*mod \w+\s*\{', src)
    return src if m is None else src[:m.start()]


def strip_comments(src):
    src = re.sub(r'/\*.*?\*/', '', src, flags=re.S)
    return re.sub(r'//[^\n]*', '', src)


def targets(src, top, depth):
    """Top-level modules a file reaches; `depth` `super::`s leave `top`."""
    out = set()
    for m in re.finditer(r'\$?crate::\s*\{([^;]*?)\}\s*;', src, re.S):
        for name in re.findall(r'(?:^|[,{])\s*([a-z_][a-z0-9_]*)\s*(?:::|[,}]|$)', m.group(1)):
            out.add(name)
    for m in re.finditer(r'\$?\bcrate::([a-z_][a-z0-9_]*)', src):
        out.add(m.group(1))
    for m in re.finditer(r'\b((?:super::)+)([a-z_][a-z0-9_]*)', src):
        ups = m.group(1).count('super::')
        if ups >= depth:  # leaves `top`
            out.add(m.group(2))
    out.discard(top)
    return out


def main():
    rank, rows = layers()
    rules = sealed()
    problems = []
    files = 0
    for dp, _, fn in os.walk(ROOT):
        for f in sorted(fn):
            if not f.endswith('.rs'):
                continue
            path = os.path.join(dp, f)
            rel = os.path.relpath(path, ROOT)
            top = top_of(rel)
            if top is None or f == 'tests.rs':
                continue
            files += 1
            if top not in rank:
                problems.append(f'{path}: module `{top}` is in no layer of {DOC}')
                continue
            # how many `super::` leave `top`: one per segment of the file's module path
            segments = rel.count('/') + (0 if f == 'mod.rs' else 1)
            src = strip_comments(strip_tests(open(path).read()))
            for tops, paths in rules:
                if top in tops:
                    for p in paths:
                        if reaches(src, p):
                            problems.append(f'{path}: `{top}` reaches `{p}`, sealed to it by {DOC}')
            for t in sorted(targets(src, top, segments)):
                if t not in rank:
                    continue  # an item of lib.rs or a crate, not a module
                if rank[t] > rank[top]:
                    problems.append(f'{path}: `{top}` (layer {len(rows) - rank[top] + 1}) imports `{t}` (layer {len(rows) - rank[t] + 1}), a higher layer')
    for p in problems:
        print(p)
    print(f'[layers] {files} files of {ROOT}, {len(rows)} layers, {len(rules)} sealed rules, {len(problems)} violations')
    sys.exit(1 if problems else 0)


main()
