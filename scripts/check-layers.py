#!/usr/bin/env python3
"""Fails when a file under src/ includes a header of a layer above its own.

libdao's layers call only down (docs/architecture.md):

    capi  ->  recycle | tiered | whole  ->  strategy  ->  resource  ->  trace  ->  core  ->  util

A file may include headers of its own folder, of any layer below, and the
public headers (dao.h, dao/*.h). The three features sit side by side and do
not include each other. A folder that is not in LAYERS below is an error
too, so that a new folder is placed in the order before it is used.

Usage: check-layers.py [--root DIR]   (DIR: the repository, default: this
script's parent). Exit 0 when every include runs down, 1 otherwise, printing
each violation as file:line: message.
"""
import argparse
import os
import re
import sys

# Floor of each top-level folder of src/: higher floors may include lower.
LAYERS = {
    "capi": 7,
    "recycle": 6,
    "tiered": 6,
    "whole": 6,
    "strategy": 5,
    "resource": 4,
    "trace": 3,
    "core": 2,
    "util": 1,
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path_in_src):
    return path_in_src.split("/", 1)[0] if "/" in path_in_src else None


def check(root):
    src = os.path.join(root, "src")
    problems = []
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith((".c", ".cpp", ".h", ".hpp", ".inc")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src).replace(os.sep, "/")
            mine = layer_of(rel)
            if mine is None:
                problems.append(f"src/{rel}:1: a source file directly under src/ belongs to no layer")
                continue
            if mine not in LAYERS:
                problems.append(f"src/{rel}:1: folder '{mine}' is not a layer; add it to "
                                f"scripts/check-layers.py and docs/architecture.md")
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = m.group(1)
                    if target == "dao.h" or target.startswith("dao/"):
                        continue  # the public API: every layer may use its types
                    theirs = layer_of(target)
                    if theirs is None or theirs == mine:
                        continue  # same folder, or a file next to this one
                    if theirs not in LAYERS:
                        continue  # not a src/ header (a generated or build-tree one)
                    if LAYERS[theirs] > LAYERS[mine]:
                        problems.append(f"src/{rel}:{number}: includes \"{target}\": layer "
                                        f"'{theirs}' is above '{mine}' (layers only call down)")
                    elif LAYERS[theirs] == LAYERS[mine]:
                        problems.append(f"src/{rel}:{number}: includes \"{target}\": features "
                                        f"'{mine}' and '{theirs}' do not include each other")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = parser.parse_args()
    problems = check(args.root)
    for p in problems:
        print(p)
    if problems:
        print(f"check-layers: {len(problems)} include(s) run up or across a layer", file=sys.stderr)
        return 1
    print("check-layers: every include under src/ runs down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
