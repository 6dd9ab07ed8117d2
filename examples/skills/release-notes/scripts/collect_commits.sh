#!/bin/sh
# Print commits between two revisions as: hash<TAB>type<TAB>scope<TAB>subject
# Usage: collect_commits.sh FROM TO
set -eu
from=${1:?usage: collect_commits.sh FROM TO}
to=${2:-HEAD}
git log --no-merges --format='%h%x09%s' "$from..$to" |
  sed -E 's/^([0-9a-f]+)\t([a-z]+)(\(([^)]*)\))?(!)?: (.*)$/\1\t\2\5\t\4\t\6/'
