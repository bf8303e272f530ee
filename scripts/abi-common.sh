# Shared by scripts/check-abi.sh and scripts/update-abi.sh (sourced, not run):
# how the ABI of libdao.so is read, so that the baseline and the check read
# it the same way.
# shellcheck shell=bash

# Exported symbol names of a shared library, sorted. Type A entries are
# symbol-version nodes of a version script, not symbols.
dao_abi_exports() { # library
  nm -D --defined-only "$1" | awk 'NF >= 3 && $2 != "A" { print $3 }' | LC_ALL=C sort -u
}

# The source tree a build directory was configured from (its headers are the
# public types that count), read from the CMake cache.
dao_abi_source_dir() { # build-dir
  local dir
  dir=$(sed -n 's/^dao_SOURCE_DIR:STATIC=//p' "$1/CMakeCache.txt" 2> /dev/null || true)
  if [ -z "$dir" ]; then
    dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$1/CMakeCache.txt" 2> /dev/null || true)
  fi
  printf '%s\n' "$dir"
}

# The library of a build directory, with the checks abidw needs. Returns 2
# when there is none, 77 (the "skipped" of test drivers) when it has no
# debug information.
dao_abi_library() { # build-dir
  local lib=$1/libdao.so
  if [ ! -e "$lib" ]; then
    echo "error: $lib not found: build the dao target first" >&2
    return 2
  fi
  lib=$(readlink -f "$lib")
  # abidw reads types from DWARF; without it only symbols could be compared.
  if ! readelf -S --wide "$lib" | grep -q '\.debug_info'; then
    echo "error: $lib has no debug information: configure with" \
         "-DCMAKE_BUILD_TYPE=RelWithDebInfo (or Debug)" >&2
    return 77
  fi
  printf '%s\n' "$lib"
}

# The ABI dump of the public interface only: exported functions and the types
# they reach that are defined in the public headers. Locations are file names
# only and type ids are hashes, so that a dump does not depend on where the
# tree was built and regenerating it changes only what changed.
dao_abi_dump() { # library headers-dir out-file
  abidw --headers-dir "$2" --drop-private-types --exported-interfaces-only \
    --no-corpus-path --no-comp-dir-path --short-locs --type-id-style hash \
    --out-file "$3" "$1"
}

# libabigail suppressions for the changes the ABI policy (docs/abi.md) allows:
#  - a sized struct (first member `size_t struct_size`) may grow at its end:
#    the caller says how much of it it knows;
#  - an end marker of an enum (an enumerator named *_END_ or *_COUNT, "one
#    past the largest value") may change when values are appended.
# Generated from the headers, so a new sized struct is covered at once.
dao_abi_suppressions() { # headers-dir
  find "$1" -name '*.h' -print0 | LC_ALL=C sort -z | xargs -0 cat | awk '
    /^[[:space:]]*typedef[[:space:]]+struct[[:space:]]+[A-Za-z_0-9]+[[:space:]]*\{/ {
      name = $0
      sub(/^[[:space:]]*typedef[[:space:]]+struct[[:space:]]+/, "", name)
      sub(/[[:space:]]*\{.*/, "", name)
      pending = name
      next
    }
    pending != "" && /^[[:space:]]*($|\/\*|\*|\/\/)/ { next }
    pending != "" {
      if ($0 ~ /^[[:space:]]*size_t[[:space:]]+struct_size[[:space:]]*;/) {
        printf "[suppress_type]\n  label = sized struct %s grows at its end\n", pending
        printf "  type_kind = struct\n  name = %s\n  has_data_member_inserted_at = end\n\n", pending
      }
      pending = ""
    }
    /^[[:space:]]*typedef[[:space:]]+enum[[:space:]]+[A-Za-z_0-9]+[[:space:]]*\{/ {
      enum = $0
      sub(/^[[:space:]]*typedef[[:space:]]+enum[[:space:]]+/, "", enum)
      sub(/[[:space:]]*\{.*/, "", enum)
      next
    }
    enum != "" && /^[[:space:]]*\}/ { enum = ""; next }
    enum != "" && match($0, /^[[:space:]]*DAO_[A-Z0-9_]*(_END_|_COUNT)[[:space:]]*(=|,|$)/) {
      marker = $0
      sub(/^[[:space:]]*/, "", marker)
      sub(/[[:space:]=,].*/, "", marker)
      printf "[suppress_type]\n  label = end marker %s of %s\n", marker, enum
      printf "  type_kind = enum\n  name = %s\n  changed_enumerators = %s\n\n", enum, marker
    }
  '
}
