#!/usr/bin/env python3
"""ctest docs_lists: the lists in README.md and the docs name everything there
is, so that a new page, header, build option or installed file cannot go
undocumented:

  - every page docs/*.md (but mainpage.md) is linked from README.md's
    "Documentation" section as (docs/NAME.md), and its anchor ({#anchor} on
    its first line) is referred to (@ref anchor) in docs/mainpage.md;
  - every public header include/dao.h, include/dao/*.h is in README.md's
    "Headers" list and in the API list of docs/mainpage.md (`dao/NAME.h`);
  - every build option (option(DAO_...) or set(DAO_... CACHE) in any CMake
    file of the tree) is in README.md's build options and in the table of
    docs/getting-started.md;
  - with --installed PREFIX (an installed tree, tests/install): every file
    installed matches an entry of README.md's "Installed files" list (globs
    in backquotes, lib/<multiarch>/ read as lib/).

Usage: check-docs-lists.py SOURCE_DIR [--installed PREFIX]
Prints every omission and exits 1 when there is one.
"""
import fnmatch
import os
import re
import sys


def section(text, title):
    """The text of the markdown section `## title` (up to the next ## )."""
    m = re.search(r"^## " + re.escape(title) + r"\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    return m.group(1) if m else None


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--installed"):
        print(__doc__.strip().split("\n\n")[-2], file=sys.stderr)
        return 2
    src = argv[1]
    readme = open(os.path.join(src, "README.md"), encoding="utf-8").read()
    mainpage = open(os.path.join(src, "docs", "mainpage.md"), encoding="utf-8").read()
    started = open(os.path.join(src, "docs", "getting-started.md"), encoding="utf-8").read()
    problems = []

    docs_section = section(readme, "Documentation")
    headers_section = section(readme, "Headers")
    installed_section = section(readme, "Installed files")
    options_section = section(readme, "Build options")
    for name, sec in (("Documentation", docs_section), ("Headers", headers_section),
                      ("Installed files", installed_section), ("Build options", options_section)):
        if sec is None:
            problems.append(f"README.md has no '## {name}' section")
    docs_section = docs_section or ""
    headers_section = headers_section or ""
    installed_section = installed_section or ""
    options_section = options_section or ""

    # Pages.
    docs_dir = os.path.join(src, "docs")
    pages = sorted(f for f in os.listdir(docs_dir) if f.endswith(".md") and f != "mainpage.md")
    refs = set(re.findall(r"@ref\s+([A-Za-z0-9_-]+)", mainpage))
    for page in pages:
        if f"(docs/{page})" not in docs_section:
            problems.append(f"docs/{page} is not linked from README.md's Documentation section")
        first = open(os.path.join(docs_dir, page), encoding="utf-8").readline()
        m = re.search(r"\{#([A-Za-z0-9_-]+)\}", first)
        if not m:
            problems.append(f"docs/{page} has no {{#anchor}} on its first line")
        elif m.group(1) not in refs:
            problems.append(f"docs/{page} (@ref {m.group(1)}) is not listed in docs/mainpage.md")

    # Headers.
    inc = os.path.join(src, "include")
    headers = ["dao.h"] + sorted("dao/" + f for f in os.listdir(os.path.join(inc, "dao"))
                                 if f.endswith(".h"))
    for h in headers:
        if f"`{h}`" not in headers_section:
            problems.append(f"include/{h} is not in README.md's Headers list")
        if not re.search(r"(?<![\w/])" + re.escape(h) + r"(?![\w])", mainpage):
            problems.append(f"include/{h} is not in docs/mainpage.md's API list")

    # Build options.
    options = set()
    for d, subdirs, files in os.walk(src):
        rel = os.path.relpath(d, src)
        top = rel.split(os.sep)[0]
        if rel != "." and (top.startswith("build") or top.startswith(".") or top == "debian"):
            subdirs[:] = []
            continue
        for f in files:
            if f == "CMakeLists.txt" or f.endswith(".cmake"):
                text = open(os.path.join(d, f), encoding="utf-8", errors="replace").read()
                options.update(re.findall(r"^\s*option\(\s*(DAO_[A-Z0-9_]+)", text, re.M))
                options.update(re.findall(r"^\s*set\(\s*(DAO_[A-Z0-9_]+)\s[^)]*\bCACHE\b", text,
                                          re.M | re.S))
    for opt in sorted(options):
        if f"`{opt}`" not in options_section and f"-D{opt}" not in options_section:
            problems.append(f"build option {opt} is not in README.md's Build options")
        if f"| `{opt}`" not in started:
            problems.append(f"build option {opt} is not in docs/getting-started.md's table")

    # Installed files.
    if len(argv) == 4:
        prefix = argv[3]
        globs = [g for g in re.findall(r"`([^`\s]+)`", installed_section) if "/" in g]
        if not globs:
            problems.append("README.md's Installed files list has no `path` entries")
        multiarch = re.compile(r"^lib/[a-z0-9_]+-linux-[a-z0-9_]+/")
        count = 0
        for d, _, files in os.walk(prefix):
            for f in files:
                rel = os.path.relpath(os.path.join(d, f), prefix)
                rel = multiarch.sub("lib/", rel)
                count += 1
                if not any(fnmatch.fnmatchcase(rel, g) for g in globs):
                    problems.append(f"installed file {rel} matches no entry of README.md's "
                                    "Installed files list")
        print(f"{count} installed files checked against {len(globs)} entries")

    for p in problems:
        print("FAIL:", p)
    print(f"{len(pages)} pages, {len(headers)} headers, {len(options)} build options checked: "
          + ("OK" if not problems else f"{len(problems)} omissions"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
