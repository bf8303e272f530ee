#!/usr/bin/env bash
# Builds the Debian packages of libdao (libdao0, libdao-dev, libdao-fortran0,
# libdao-fortran-dev, libdao-mpi0, libdao-mpi-dev, libdao-doc, dao-tools,
# python3-dao) and checks them the way a user meets them:
#   1. installs what the build needs from Debian when it is missing
#      (dpkg-dev, debhelper, lintian, then the package's Build-Depends);
#   2. copies the tree (tracked and untracked files that git does not
#      ignore; DAO_DEB_FROM=HEAD: the last commit only) to OUT_DIR/src, makes
#      the upstream tarball (the tree without debian/), and builds the source
#      and binary packages there with dpkg-buildpackage -us -uc, so the
#      working tree stays clean;
#   3. runs lintian on the result and fails on any error or warning (the
#      overrides in debian/*.lintian-overrides say why each one is there);
#   4. checks what each package holds and depends on (libdao0: the C library
#      alone, no gfortran, MPI or CUDA; the CUDA backend built in), unpacks
#      every .deb with dpkg-deb -x into a fresh prefix (no root, no chroot)
#      and builds and runs programs against it: the C consumer of
#      tests/install through pkg-config (shared, --static and dao-static)
#      and through find_package(dao), the installed `dao` tool, and every
#      autopkgtest of debian/tests with the unpacked tree on its paths.
# Any failure exits non-zero; the last line gives the time it took.
# See docs/packaging.md.
#
# Usage: scripts/build-deb.sh [OUT_DIR]     (default: build-deb/)
# Environment: DAO_DEB_JOBS (parallel jobs, default nproc), DAO_DEB_FROM=HEAD,
# DAO_DEB_PROFILES (dpkg build profiles, e.g. nocheck), DAO_DEB_CHECK_ONLY=1
# (steps 3 and 4 only, on the packages of a previous run in OUT_DIR).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/build-deb}
jobs=${DAO_DEB_JOBS:-$(nproc)}
start=$SECONDS

step() { printf '\n== %s (%ds)\n' "$*" "$((SECONDS - start))"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
apt_install() {
  echo "installing from Debian: $*"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "$@"
}

# --- 1. tools --------------------------------------------------------------------
step "tools"
missing=()
need_cmd() { command -v "$1" > /dev/null 2>&1 || missing+=("$2"); }
need_cmd dpkg-buildpackage dpkg-dev
need_cmd dh debhelper
need_cmd lintian lintian
need_cmd make make
need_cmd gcc gcc
need_cmd g++ g++
need_cmd pkg-config pkg-config
need_cmd cmake cmake
need_cmd git git
if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi

# --- 2. a copy of the tree, and the build --------------------------------------------
version=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
upstream=${version#*:}
upstream=${upstream%-*}
mkdir -p "$out"
out=$(cd "$out" && pwd)
srcdir=$out/src/libdao-$upstream
if [ "${DAO_DEB_CHECK_ONLY:-0}" = 1 ]; then
  # Steps 3 and 4 only, on the packages a previous run left in OUT_DIR.
  [ -f "$srcdir/debian/control" ] || fail "DAO_DEB_CHECK_ONLY=1: no previous build in $out"
  rm -rf "$out/prefix" "$out/consumer"
else
rm -rf "$out"
mkdir -p "$srcdir"
step "copy the tree into $srcdir"
if [ "${DAO_DEB_FROM:-}" = "HEAD" ]; then
  git -C "$root" archive --format=tar HEAD | tar -xf - -C "$srcdir"
else
  # What git would commit: tracked files as they are now and new files that
  # are not ignored (no build directories).
  (cd "$root" && git ls-files -z --cached --others --exclude-standard |
     while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
     tar --null -T - -cf -) | tar -xf - -C "$srcdir"
fi
[ -f "$srcdir/debian/control" ] || fail "the copy has no debian/control"
# The upstream tarball of a "3.0 (quilt)" source package: the tree without
# debian/, with fixed owners and times so that it is the same every time.
tar -C "$out/src" --exclude="libdao-$upstream/debian" --sort=name --owner=0 --group=0 \
  --numeric-owner --mtime="@$(dpkg-parsechangelog -l "$srcdir/debian/changelog" -S Timestamp)" \
  -czf "$out/src/libdao_$upstream.orig.tar.gz" "libdao-$upstream"

if ! (cd "$srcdir" && dpkg-checkbuilddeps ${DAO_DEB_PROFILES:+-P"$DAO_DEB_PROFILES"}) 2> "$out/builddeps.txt"; then
  cat "$out/builddeps.txt"
  step "build dependencies"
  (cd "$srcdir" && $sudo env DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -qq \
     ${DAO_DEB_PROFILES:+-P"$DAO_DEB_PROFILES"} ./)
fi

step "dpkg-buildpackage -us -uc (log: $out/build.log)"
profiles=()
if [ -n "${DAO_DEB_PROFILES:-}" ]; then profiles=("-P$DAO_DEB_PROFILES"); fi
if ! (cd "$srcdir" && DEB_BUILD_OPTIONS="parallel=$jobs ${DEB_BUILD_OPTIONS:-}" \
        dpkg-buildpackage -us -uc "${profiles[@]}") > "$out/build.log" 2>&1; then
  tail -n 60 "$out/build.log"
  fail "dpkg-buildpackage failed; the whole log is $out/build.log"
fi
grep -E '^[0-9]+% tests passed|tests failed out of' "$out/build.log" || true
# dpkg-gensymbols says here when the library exports symbols that
# debian/libdao0.symbols does not list yet (scripts/update-abi.sh adds them).
grep -A12 '^dpkg-gensymbols: warning' "$out/build.log" || true
fi
changes=$(ls "$out"/src/libdao_"${version#*:}"_*.changes)
debs=("$out"/src/*.deb)
for deb in "${debs[@]}"; do
  echo "$(basename "$deb"): $(du -h "$deb" | cut -f1)"
done

# --- 3. lintian --------------------------------------------------------------------------
step "lintian"
rc=0
lintian --fail-on error,warning --display-info --tag-display-limit 0 "$changes" \
  > "$out/lintian.txt" 2>&1 || rc=$?
cat "$out/lintian.txt"
for level in E W I; do
  printf '%s: %s tags\n' "$level" "$(grep -c "^$level: " "$out/lintian.txt" || true)"
done
[ "$rc" -eq 0 ] || fail "lintian reported errors or warnings (status $rc)"

# --- 4. a fresh prefix and programs built against it ---------------------------------------
prefix=$out/prefix
step "unpack the packages into $prefix"
mkdir -p "$prefix"
for deb in "${debs[@]}"; do dpkg-deb -x "$deb" "$prefix"; done
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=$prefix/usr/lib/$multiarch
pcdir=$libdir/pkgconfig
# package:file that each package must hold.
ma=usr/lib/$multiarch
for pf in libdao0:$ma/libdao.so.0 libdao-dev:usr/include/dao.h libdao-dev:usr/include/dao/version.h \
          libdao-dev:$ma/libdao.a libdao-dev:$ma/pkgconfig/dao.pc \
          libdao-dev:$ma/pkgconfig/dao-static.pc libdao-dev:$ma/cmake/dao/daoConfig.cmake \
          libdao-fortran0:$ma/libdao_fortran.so.0 libdao-fortran-dev:$ma/pkgconfig/dao-fortran.pc \
          libdao-fortran-dev:usr/include/dao/fortran/dao.mod \
          libdao-fortran-dev:$ma/cmake/dao/daoFortranTargets.cmake \
          libdao-mpi0:$ma/libdao_mpi.so.0 libdao-mpi-dev:$ma/pkgconfig/dao-mpi.pc \
          libdao-mpi-dev:usr/include/dao/whole_mpi.h libdao-mpi-dev:$ma/cmake/dao/daoMpiTargets.cmake \
          dao-tools:usr/bin/dao dao-tools:usr/share/man/man1/dao.1.gz \
          libdao-doc:usr/share/doc/libdao-doc/html/index.html \
          python3-dao:usr/lib/python3/dist-packages/dao/__init__.py; do
  pkg=${pf%%:*} f=${pf#*:}
  deb=$(ls "$out"/src/"${pkg}"_*.deb 2> /dev/null | head -n 1)
  [ -n "$deb" ] || fail "no package $pkg was built"
  # (The listing is kept in a variable: with pipefail, `dpkg-deb -c | grep -q`
  # fails when grep exits first and dpkg-deb gets SIGPIPE.)
  contents=$(dpkg-deb -c "$deb")
  grep -q " \./$f\( \|$\)" <<< "$contents" || fail "/$f is not in $pkg"
done
for deb in "${debs[@]}"; do
  case $(dpkg-deb -f "$deb" Depends) in
    *cuda*|*nvidia*) fail "$(basename "$deb") depends on a CUDA package" ;;
  esac
done
# libdao0 is the C library alone: nothing of Fortran or MPI.
libdao0_depends=$(dpkg-deb -f "$(ls "$out"/src/libdao0_*.deb)" Depends)
echo "libdao0 depends on: $libdao0_depends"
case $libdao0_depends in
  *gfortran*|*mpi*) fail "libdao0 depends on Fortran or MPI: $libdao0_depends" ;;
esac
# The CUDA backend is in the library (no toolkit was needed to build it).
lib_strings=$(strings "$prefix/$ma/libdao.so.0")
grep -q "^libcuda.so.1$" <<< "$lib_strings" || fail "libdao.so.0 was built without the CUDA backend"

# Only this prefix: PKG_CONFIG_LIBDIR leaves out the system's .pc files, and
# the .pc files locate the tree from their own place (${pcfiledir}).
export PKG_CONFIG_LIBDIR=$pcdir
unset PKG_CONFIG_PATH
export DAO_SIM_DEVICES=2x64MiB
unset DAO_ALLOCATOR DAO_ALLOC_CONF
cflags_strict=(-std=c99 -pedantic -Wall -Wextra -Werror)
consumer=$srcdir/tests/install/consumer.c
work=$out/consumer
mkdir -p "$work"

step "consumer through pkg-config (shared)"
pc_version=$(pkg-config --modversion dao)
[ "$pc_version" = "$upstream" ] || fail "dao.pc has version $pc_version, the package $upstream"
for var in libdir includedir; do
  dir=$(pkg-config --variable=$var dao)
  case $(cd "$dir" 2> /dev/null && pwd -P) in
    "$(cd "$prefix" && pwd -P)"/*) echo "$var=$dir" ;;
    *) fail "dao.pc gives $var=$dir, outside the unpacked prefix" ;;
  esac
done
# shellcheck disable=SC2046  # the flags are words
cc "${cflags_strict[@]}" "$consumer" -o "$work/consumer" $(pkg-config --cflags --libs dao)
loaded=$(LD_LIBRARY_PATH=$libdir ldd "$work/consumer")
case $loaded in
  *"$libdir/libdao.so.0"*) ;;
  *) echo "$loaded"; fail "the consumer does not load the unpacked libdao.so.0" ;;
esac
LD_LIBRARY_PATH=$libdir "$work/consumer" > "$work/consumer.log" ||
  { cat "$work/consumer.log"; fail "the consumer failed"; }
tail -n 1 "$work/consumer.log"

step "consumer through pkg-config --static"
# -l:libdao.a where the flags say -ldao: the linker would take the .so.
static_flags=$(pkg-config --static --cflags --libs dao |
  sed 's/\(^\|[[:space:]]\)-ldao\([[:space:]]\|$\)/\1-l:libdao.a\2/')
# shellcheck disable=SC2086
cc "${cflags_strict[@]}" "$consumer" -o "$work/consumer_static" $static_flags
case $(readelf -d "$work/consumer_static") in
  *"NEEDED"*"[libdao"*) fail "the static consumer still needs the shared libdao" ;;
esac
"$work/consumer_static" > "$work/consumer_static.log" ||
  { cat "$work/consumer_static.log"; fail "the static consumer failed"; }
tail -n 1 "$work/consumer_static.log"

step "consumer through pkg-config dao-static"
# shellcheck disable=SC2046
cc "${cflags_strict[@]}" "$consumer" -o "$work/consumer_dao_static" $(pkg-config --cflags --libs dao-static)
case $(readelf -d "$work/consumer_dao_static") in
  *"NEEDED"*"[libdao"*) fail "the dao-static consumer still needs the shared libdao" ;;
esac
"$work/consumer_dao_static" > "$work/consumer_dao_static.log" ||
  { cat "$work/consumer_dao_static.log"; fail "the dao-static consumer failed"; }
tail -n 1 "$work/consumer_dao_static.log"

step "consumer through find_package(dao)"
cmake -S "$srcdir/tests/install/consumer_cmake" -B "$work/cmake" \
  -DCMAKE_PREFIX_PATH="$prefix/usr" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_BUILD_TYPE=Release > "$work/cmake-configure.log" 2>&1 ||
  { cat "$work/cmake-configure.log"; fail "configuring the find_package consumer failed"; }
grep -q "dao_DIR:PATH=$prefix/" "$work/cmake/CMakeCache.txt" ||
  fail "find_package(dao) found $(sed -n 's/^dao_DIR:PATH=//p' "$work/cmake/CMakeCache.txt"), not the unpacked package"
cmake --build "$work/cmake" > "$work/cmake-build.log" 2>&1 ||
  { cat "$work/cmake-build.log"; fail "building the find_package consumer failed"; }
LD_LIBRARY_PATH=$libdir "$work/cmake/consumer" > "$work/consumer_cmake.log" ||
  { cat "$work/consumer_cmake.log"; fail "the find_package consumer failed"; }
tail -n 1 "$work/consumer_cmake.log"

if [ -f "$pcdir/dao-fortran.pc" ]; then
  step "Fortran example through pkg-config dao-fortran"
  fc=$(command -v gfortran || true)
  if [ -z "$fc" ]; then
    echo "gfortran not found: skipped"
  else
    fmoddir=$(pkg-config --variable=fmoddir dao-fortran)
    [ -f "$fmoddir/dao.mod" ] || fail "dao.mod is not in fmoddir=$fmoddir"
    # shellcheck disable=SC2046
    "$fc" -Wall -Wextra -Werror "$srcdir/bindings/fortran/examples/quickstart.f90" \
      -o "$work/quickstart_f90" $(pkg-config --cflags --libs dao-fortran)
    LD_LIBRARY_PATH=$libdir "$work/quickstart_f90" > "$work/quickstart_f90.log" ||
      { cat "$work/quickstart_f90.log"; fail "the Fortran example failed"; }
    tail -n 2 "$work/quickstart_f90.log"
  fi
fi

step "the packaged dao tool"
dao=$prefix/usr/bin/dao
tool_version=$(LD_LIBRARY_PATH=$libdir "$dao" --version) || fail "dao --version failed"
echo "$tool_version"
case $tool_version in
  *"libdao $upstream"*) ;;
  *) fail "dao --version printed '$tool_version', not libdao $upstream" ;;
esac
LD_LIBRARY_PATH=$libdir "$dao" info > "$work/dao-info.txt" ||
  { cat "$work/dao-info.txt"; fail "dao info failed"; }
grep -q "^sim: 2 devices" "$work/dao-info.txt" || { cat "$work/dao-info.txt"; fail "dao info shows no 2 sim devices"; }
sed -n '1p;/^cuda:/,/backend/p' "$work/dao-info.txt"
LD_LIBRARY_PATH=$libdir "$dao" info --json > "$work/dao-info.json" || fail "dao info --json failed"

step "the autopkgtests (debian/tests) against the unpacked packages"
# The unpacked tree first, then the system's .pc files, as the dependencies
# of the packages (MPI's ompi-c.pc for dao-mpi.pc) would be on a system.
mkdir -p "$work/autopkgtest"
tests=$(sed -n 's/^Tests: *//p' "$srcdir/debian/tests/control")
for t in $tests; do
  t0=$SECONDS
  (cd "$srcdir" && AUTOPKGTEST_TMP="$work/autopkgtest/$t" CMAKE_PREFIX_PATH="$prefix/usr" \
     DAO_PREFIX="$prefix/usr" DAO_LIBDIR="$libdir" LD_LIBRARY_PATH="$libdir" \
     PKG_CONFIG_LIBDIR="$pcdir:/usr/lib/$multiarch/pkgconfig:/usr/share/pkgconfig" \
     PATH="$prefix/usr/bin:$PATH" PYTHONPATH="$prefix/usr/lib/python3/dist-packages" \
     sh -c 'mkdir -p "$AUTOPKGTEST_TMP" && exec "debian/tests/$0"' "$t") \
    > "$work/autopkgtest-$t.log" 2>&1 ||
    { cat "$work/autopkgtest-$t.log"; fail "autopkgtest $t failed"; }
  echo "$t: $(tail -n 1 "$work/autopkgtest-$t.log") ($((SECONDS - t0)) s)"
done

step "done"
echo "packages: $out/src/*.deb; lintian: $out/lintian.txt; build log: $out/build.log"
echo "build-deb: OK ($((SECONDS - start)) s, $(nproc) cores; load average now: $(cut -d' ' -f1-3 /proc/loadavg))"
