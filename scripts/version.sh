#!/usr/bin/env bash
# The version of the checked-out tree, as `make package` labels a release and `make deploy`
# looks for one: the commit (git rev-parse HEAD) when the tracked files are as committed,
# else <commit>-dirty-<12 hex digits of the difference>, so that a release built from edits
# is never taken for the commit (nor two different edits for each other); "unknown" outside
# a git checkout. It only reads: no command here writes git's index. Files git does not
# track are not counted (`git add` a new file before packaging).
set -euo pipefail
commit="$(git rev-parse --verify -q HEAD 2>/dev/null)" || { echo unknown; exit 0; }
difference="$(git --no-optional-locks diff --no-ext-diff --no-textconv --no-color --binary HEAD --)"
if [ -z "$difference" ]; then
  echo "$commit"
else
  echo "$commit-dirty-$(printf '%s' "$difference" | sha256sum | cut -c1-12)"
fi
