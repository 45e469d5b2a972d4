#!/usr/bin/env python3
"""No source file of the library or a function over 600 lines: a file that grows past it is
split into a folder of modules named for what they hold (unit tests in their own
`tests.rs`). The test harness and benchmark (tests/) are not counted."""
import os, sys

LIMIT = 600
roots = ['shared/src', 'functions']
over = []
files = 0
for root in roots:
    for dp, _, fn in os.walk(root):
        for f in fn:
            if f.endswith('.rs'):
                p = os.path.join(dp, f)
                files += 1
                n = sum(1 for _ in open(p))
                if n > LIMIT:
                    over.append((n, p))
for n, p in sorted(over, reverse=True):
    print(f'{p}: {n} lines (at most {LIMIT})')
print(f'[sizes] {files} files of {", ".join(roots)}, {len(over)} over {LIMIT} lines')
sys.exit(1 if over else 0)
