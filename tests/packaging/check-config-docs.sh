#!/usr/bin/env bash
# ctest config_docs: the table in docs/environment.md and the code agree, so
# the documentation cannot drift:
#   - config keys: every key of a strategy's row in the strategy registry
#     (src/strategy/registry.cpp) is a row of kind "`NAME` config key", the
#     keys every strategy takes (`upstream`) rows of kind "`strategy` config
#     key", and every key of every other `reject_unknown({...})` list in src/
#     a row of kind "`AREA` config key", AREA the area directory
#     (src/recycle/: recycle, src/tiered/: tiered, ...);
#   - environment variables: every "DAO_..." string in a source file that
#     calls getenv() is a row of kind "environment"; a string that ends in
#     "_" is a family completed at run time ("DAO_ALLOCATOR_" + kind), which
#     the table writes as DAO_ALLOCATOR_<KIND>;
#   - and the other way: a row whose key or variable the code does not know
#     fails too.
#
# Usage: check-config-docs.sh SOURCE_DIR
set -euo pipefail

if [ "$#" -ne 1 ]; then
  echo "usage: $0 SOURCE_DIR" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
doc=$src/docs/environment.md
[ -f "$doc" ] || { echo "FAIL: $doc is missing"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- what the code accepts: "AREA KEY" lines and variable names -------------------------
# perl-base is part of every Debian system; the lists span several lines.
# shellcheck disable=SC2016  # perl code: its $ are perl's
find "$src/src" -name '*.cpp' -print0 | LC_ALL=C sort -z |
  xargs -0 perl -0777 -ne '
    my $area = $ARGV;
    if ($area =~ m{/src/strategy/([^/]+)\.cpp$}) { $area = $1 }
    elsif ($area =~ m{/src/([^/]+)/[^/]+\.cpp$}) { $area = $1 }
    while (/reject_unknown\s*\(\s*\{(.*?)\}\s*\)/sg) {
      my $list = $1;
      print "$area $1\n" while $list =~ /"([^"]*)"/g;
    }
    if ($ARGV =~ m{/src/strategy/registry\.cpp$}) {
      # Rows: {"name", "summary", {"key", ...}, make_name ...}
      while (/\{\s*"([a-z_]+)",\s*"(?:[^"\\]|\\.)*",\s*\{(.*?)\},\s*make_/sg) {
        my ($name, $list) = ($1, $2);
        print "$name $1\n" while $list =~ /"([^"]*)"/g;
      }
      # The keys of every strategy: keys.insert(..., {"upstream", ...})
      if (/keys\.insert\([^{]*\{(.*?)\}\)/s) {
        my $list = $1;
        while ($list =~ /"([a-z_]+)"/g) { print "strategy $1\n" }
      }
    }' | LC_ALL=C sort -u > "$work/code-keys"
grep -rlE --include='*.cpp' --include='*.hpp' '\bgetenv[[:space:]]*\(' "$src/src" |
  xargs -r grep -ohE '"DAO_[A-Z0-9_]+' | sed 's/^"//' | LC_ALL=C sort -u > "$work/code-env"

# --- what the table documents ---------------------------------------------------------
# Rows start with "| `NAME` |"; the second cell is the kind.
awk -v work="$work" -F'|' '
  /^\| *`/ {
    name = $2; kind = $3
    gsub(/[` ]/, "", name)
    gsub(/^ +| +$/, "", kind)
    if (kind == "environment") {
      sub(/<.*$/, "", name)   # DAO_ALLOCATOR_<KIND> is the family DAO_ALLOCATOR_
      print name > work "/doc-env"
    } else if (match(kind, /^`[a-z_0-9]+` config key$/)) {
      area = kind
      sub(/^`/, "", area); sub(/`.*$/, "", area)
      print area " " name > work "/doc-keys"
    } else {
      print "FAIL: docs/environment.md: row " name " has kind \"" kind "\"; expected \"environment\" or \"`AREA` config key\""
      bad = 1
    }
  }
  END { exit bad }' "$doc" > "$work/kinds" || { cat "$work/kinds"; exit 1; }
touch "$work/doc-env" "$work/doc-keys"
LC_ALL=C sort -u -o "$work/doc-env" "$work/doc-env"
LC_ALL=C sort -u -o "$work/doc-keys" "$work/doc-keys"

failed=0
report() { # message, lines
  if [ -n "$2" ]; then
    echo "FAIL: $1:"
    printf '%s\n' "$2" | sed 's/^/  /'
    failed=1
  fi
}
report "config keys the code accepts but docs/environment.md does not list (AREA KEY)" \
  "$(LC_ALL=C comm -23 "$work/code-keys" "$work/doc-keys")"
report "config keys docs/environment.md lists but the code does not accept (AREA KEY)" \
  "$(LC_ALL=C comm -13 "$work/code-keys" "$work/doc-keys")"
report "environment variables the code reads but docs/environment.md does not list" \
  "$(LC_ALL=C comm -23 "$work/code-env" "$work/doc-env")"
report "environment variables docs/environment.md lists but the code does not read" \
  "$(LC_ALL=C comm -13 "$work/code-env" "$work/doc-env")"

echo "code: $(wc -l < "$work/code-keys") config keys, $(wc -l < "$work/code-env") environment variables;" \
     "docs/environment.md: $(wc -l < "$work/doc-keys") keys, $(wc -l < "$work/doc-env") variables"
if [ "$failed" -ne 0 ]; then
  echo "config docs: FAILED (add or remove the rows of the table in docs/environment.md)"
  exit 1
fi
echo "config docs: OK"
