#!/usr/bin/env bash
# Makes release X.Y.Z: the places that state the version, in step (the
# version_consistency test checks that they agree):
#   - include/dao/version.h: DAO_VERSION_MAJOR/MINOR/PATCH (the CMake project
#     version, the SONAME and dao.pc follow from it at the next configure);
#   - CHANGELOG.md: the [Unreleased] section becomes [X.Y.Z] - <date> under a
#     new, empty [Unreleased], with the comparison links at the bottom;
#   - debian/changelog: a new entry X.Y.Z-1 (with dch when it is installed).
# X.Y.Z may equal the current version when it has no CHANGELOG section yet
# (releasing what version.h already says). A new major version is an ABI
# break and needs --abi-break; the steps that come with it are printed.
# The procedure around it is in docs/abi.md.
#
# Usage: scripts/bump-version.sh [--abi-break] X.Y.Z
# Environment: DEBFULLNAME, DEBEMAIL (the debian/changelog signature; default
# "libdao developers <libdao@example.org>"), DAO_RELEASE_DATE (YYYY-MM-DD).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
abi_break=0
if [ "${1:-}" = "--abi-break" ]; then abi_break=1; shift; fi
if [ "$#" -ne 1 ] || ! [[ $1 =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$ ]]; then
  echo "usage: $0 [--abi-break] X.Y.Z   (numbers without leading zeros)" >&2
  exit 2
fi
new=$1
new_major=${BASH_REMATCH[1]}
new_minor=${BASH_REMATCH[2]}
new_patch=${BASH_REMATCH[3]}
# DAO_VERSION_NUMBER is MAJOR*10000 + MINOR*100 + PATCH.
if [ "$new_minor" -gt 99 ] || [ "$new_patch" -gt 99 ]; then
  echo "error: minor and patch must be at most 99 (DAO_VERSION_NUMBER)" >&2
  exit 2
fi

header=$root/include/dao/version.h
changelog=$root/CHANGELOG.md
debian_changelog=$root/debian/changelog
part() { sed -n "s/^#define DAO_VERSION_$1 \([0-9][0-9]*\)\$/\1/p" "$header"; }
old_major=$(part MAJOR)
old=$old_major.$(part MINOR).$(part PATCH)

# --- is this a sensible next version? --------------------------------------------
if grep -q "^## \[$new\]" "$changelog"; then
  echo "error: CHANGELOG.md already has a section [$new]" >&2
  exit 1
fi
if [ "$(printf '%s\n%s\n' "$old" "$new" | sort -V | tail -n 1)" != "$new" ]; then
  echo "error: $new is older than the current version $old" >&2
  exit 1
fi
if [ "$new_major" != "$old_major" ] && [ "$abi_break" -eq 0 ]; then
  echo "error: $old -> $new changes the major version, which is the ABI version" >&2
  echo "  (SONAME libdao.so.$old_major -> libdao.so.$new_major). Pass --abi-break if" >&2
  echo "  that is meant; docs/abi.md says what comes with it." >&2
  exit 1
fi
if [ "$new_major" = "$old_major" ] && [ "$abi_break" -eq 1 ]; then
  echo "error: --abi-break needs a new major version (now $old_major)" >&2
  exit 1
fi
if ! grep -q '^## \[Unreleased\]' "$changelog"; then
  echo "error: CHANGELOG.md has no '## [Unreleased]' section to release" >&2
  exit 1
fi

# --- include/dao/version.h ----------------------------------------------------------
sed -i -e "s/^#define DAO_VERSION_MAJOR [0-9][0-9]*\$/#define DAO_VERSION_MAJOR $new_major/" \
       -e "s/^#define DAO_VERSION_MINOR [0-9][0-9]*\$/#define DAO_VERSION_MINOR $new_minor/" \
       -e "s/^#define DAO_VERSION_PATCH [0-9][0-9]*\$/#define DAO_VERSION_PATCH $new_patch/" "$header"
[ "$(part MAJOR).$(part MINOR).$(part PATCH)" = "$new" ] ||
  { echo "error: could not set the version in $header" >&2; exit 1; }
echo "include/dao/version.h: $old -> $new"

# --- CHANGELOG.md ---------------------------------------------------------------------
date=${DAO_RELEASE_DATE:-$(date -u +%Y-%m-%d)}
repo_url=$(sed -n 's/^\[Unreleased\]: \(https:\/\/github.com\/[^/]*\/[^/]*\)\/.*/\1/p' "$changelog")
repo_url=${repo_url:-https://github.com/libdao/libdao}
previous=$(sed -n 's/^## \[\([0-9][0-9.]*\)\].*/\1/p' "$changelog" | head -n 1)
if [ -n "$previous" ]; then
  new_link="[$new]: $repo_url/compare/v$previous...v$new"
else
  new_link="[$new]: $repo_url/releases/tag/v$new"
fi
awk -v new="$new" -v date="$date" -v url="$repo_url" -v new_link="$new_link" '
  /^## \[Unreleased\]/ && !done { print; print ""; print "## [" new "] - " date; done = 1; next }
  /^\[Unreleased\]: / { print "[Unreleased]: " url "/compare/v" new "...HEAD"; print new_link; linked = 1; next }
  { print }
  END { if (!linked) { print ""; print "[Unreleased]: " url "/compare/v" new "...HEAD"; print new_link } }
' "$changelog" > "$changelog.tmp"
mv "$changelog.tmp" "$changelog"
echo "CHANGELOG.md: [Unreleased] is now [$new] - $date"

# --- debian/changelog -------------------------------------------------------------------
if [ -f "$debian_changelog" ]; then
  export DEBFULLNAME=${DEBFULLNAME:-libdao developers}
  export DEBEMAIL=${DEBEMAIL:-libdao@example.org}
  current=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$debian_changelog")
  current_upstream=${current#*:}
  current_upstream=${current_upstream%-*}
  if [ "$current_upstream" = "$new" ]; then
    echo "debian/changelog: already at $current"
  elif command -v dch > /dev/null 2>&1; then
    # dch folds changes into an UNRELEASED entry; the entry of the previous
    # version is closed first so that it keeps its own.
    if [ "$(dpkg-parsechangelog -l "$debian_changelog" -S Distribution)" = UNRELEASED ]; then
      (cd "$root" && dch --release --distribution unstable --force-distribution "" 2>&1 |
         { grep -v 'libdistro-info-perl' || true; })
    fi
    (cd "$root" && dch --newversion "$new-1" --distribution UNRELEASED --force-distribution \
       "New upstream release $new." 2>&1 | { grep -v 'libdistro-info-perl' || true; })
    echo "debian/changelog: $current -> $new-1 (dch)"
  else
    # The same entry by hand: dch is in devscripts, which may be missing.
    {
      printf 'libdao (%s-1) UNRELEASED; urgency=medium\n\n' "$new"
      printf '  * New upstream release %s.\n\n' "$new"
      printf ' -- %s <%s>  %s\n\n' "$DEBFULLNAME" "$DEBEMAIL" "$(LC_ALL=C date -R)"
      # The previous entry is released now, as dch --release would say.
      sed '1s/) UNRELEASED;/) unstable;/' "$debian_changelog"
    } > "$debian_changelog.tmp"
    mv "$debian_changelog.tmp" "$debian_changelog"
    echo "debian/changelog: $current -> $new-1"
  fi
fi

cat <<EOF

Next steps (docs/abi.md, "Version bump procedure"):
  1. cmake --build <build> && (cd <build> && ctest -R version_consistency)
  2. scripts/update-abi.sh <RelWithDebInfo build>   # the released ABI becomes the baseline
  3. scripts/build-deb.sh                            # the Debian packages, lintian, a consumer
  4. commit, and tag v$new
EOF
if [ "$abi_break" -eq 1 ]; then
  cat <<EOF

This is an ABI break (SONAME libdao.so.$old_major -> libdao.so.$new_major). Also:
  - rename the Debian library package libdao$old_major -> libdao$new_major: its stanza in
    debian/control, debian/libdao$old_major.install, and the Depends of libdao-dev;
    scripts/update-abi.sh writes debian/libdao$new_major.symbols (delete the old one);
  - say in CHANGELOG.md under [$new] what broke and how a program adapts;
  - a binding that checks the major version (Rust dao-sys, Julia) follows.
EOF
fi
