#!/usr/bin/env python3
"""Static checks of the Julia binding of libdao, without Julia.

Usage: check.py BUILD_DIR

Checks, against the headers in include/ and BUILD_DIR/libdao.so:
  1. every ccall to libdao in Dao/src names a symbol the library exports,
     and every other ccall is a known Julia runtime, libuv or libc call;
  2. every exported dao_* function is ccall-ed (coverage of the C API), and
     every low-level wrapper is used by the high-level layer;
  3. each ccall's argument types (count and types) and return type match the
     C prototype (DAO_API declarations), and it passes as many arguments as
     it declares types (the prototype parser reads whole headers, sections
     under `#ifdef DAO_EXPERIMENTAL` included);
  4. each Julia struct marked "# C layout: NAME" has the fields of the C
     struct NAME (same names, same order), and the same offsets, sizes and
     total size (a C program prints sizeof/offsetof; the Julia layout is
     computed from the field types; the probe is compiled with
     -DDAO_EXPERIMENTAL, so experimental structs are checked too);
  5. every DAO_* constant in Julia has the value of the C enumerator or macro
     of that name, and every C enumerator has a Julia constant;
  6. the Julia sources, the tests and the README example are structurally
     sound (brackets and block keywords balance with `end`), and every file
     under Dao/src is included.
Exits non-zero if any check fails.
"""

import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
PKG = os.path.join(HERE, "Dao")
SRC = os.path.join(PKG, "src")
INCLUDE = os.path.join(ROOT, "include")

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def ok(msg):
    print("ok:   " + msg)


# --------------------------------------------------------------------------
# Julia lexing: blank out comments and string/char literals (keeping line
# breaks, so that positions and line numbers stay right).
# --------------------------------------------------------------------------

IDENT_CHARS = re.compile(r"[\w!]", re.UNICODE)


def blank(text):
    return re.sub(r"[^\n]", " ", text)


def strip_julia(src):
    out = []
    i, n = 0, len(src)
    prev_sig = ""  # previous significant (non-space) output character
    while i < n:
        c = src[i]
        if src.startswith("#=", i):  # nested block comment
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("#=", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("=#", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(src[i:j]))
            i = j
            continue
        if c == "#":
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(src[i:j]))
            i = j
            continue
        if c == '"' or c == "`":
            triple = src.startswith(c * 3, i)
            q = c * 3 if triple else c
            j = i + len(q)
            while j < n:
                if src[j] == "\\":
                    j += 2
                    continue
                if src.startswith(q, j):
                    j += len(q)
                    break
                if src[j] == "$" and j + 1 < n and src[j + 1] == "(":
                    # interpolation: skip a balanced (...) that may hold quotes
                    depth, j = 1, j + 2
                    while j < n and depth:
                        if src[j] == "(":
                            depth += 1
                        elif src[j] == ")":
                            depth -= 1
                        elif src[j] == '"':
                            k = j + 1
                            while k < n and src[k] != '"':
                                k += 2 if src[k] == "\\" else 1
                            j = k
                        j += 1
                    continue
                j += 1
            # keep the quotes so that `x = ""` still reads as an expression
            out.append(q + blank(src[i + len(q):j - len(q)]) + q)
            prev_sig = q[-1]
            i = j
            continue
        if c == "'":
            # a char literal unless it follows something that can be transposed
            if prev_sig and (IDENT_CHARS.match(prev_sig) or prev_sig in ")]}'\""):
                out.append(c)
                prev_sig = c
                i += 1
                continue
            j = i + 1
            if j < n and src[j] == "\\":
                j += 2
            else:
                j += 1
            while j < n and src[j] != "'" and src[j] != "\n":
                j += 1
            j = min(j + 1, n)
            out.append("'" + blank(src[i + 1:j - 1]) + "'")
            prev_sig = "'"
            i = j
            continue
        out.append(c)
        if not c.isspace():
            prev_sig = c
        i += 1
    return "".join(out)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def matching_paren(text, open_pos):
    """Index of the bracket closing the one at open_pos, or -1."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = []
    for j in range(open_pos, len(text)):
        ch = text[j]
        if ch in pairs:
            stack.append(pairs[ch])
        elif ch in ")]}":
            if not stack or stack.pop() != ch:
                return -1
            if not stack:
                return j
    return -1


def split_top(text):
    """Split at commas and semicolons outside brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch in ",;" and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    last = "".join(cur).strip()
    if last:
        parts.append(last)
    return parts


# --------------------------------------------------------------------------
# The C side.
# --------------------------------------------------------------------------


def strip_c_comments(src):
    src = re.sub(r"/\*.*?\*/", lambda m: blank(m.group(0)), src, flags=re.S)
    return re.sub(r"//[^\n]*", "", src)


def read_headers():
    """{header name: text without comments}"""
    out = {}
    hdir = os.path.join(INCLUDE, "dao")
    for name in sorted(os.listdir(hdir)):
        if name.endswith(".h"):
            with open(os.path.join(hdir, name)) as f:
                out[name] = strip_c_comments(f.read())
    return out


def parse_header(text):
    """Prototypes, typedef kinds, struct fields and enumerators of one header."""
    protos = {}
    body = re.sub(r"^\s*#.*?(?<!\\)$", "", text, flags=re.M | re.S)
    for m in re.finditer(r"\bDAO_API\b([^;]*);", body):
        decl = " ".join(m.group(1).split())
        pm = re.match(r"(.*?)\b(\w+)\s*\((.*)\)$", decl)
        if not pm:
            fail("cannot parse the prototype: " + decl)
            continue
        ret, name, params = pm.group(1).strip(), pm.group(2), pm.group(3).strip()
        plist = []
        if params and params != "void":
            for p in split_top(params):
                pm2 = re.match(r"(.*?)(\w+)$", p.strip())
                plist.append(pm2.group(1).strip() if pm2 else p.strip())
        protos[name] = (ret, plist)

    typedefs = {}  # name -> "enum" | "struct" | "opaque" | "pointer" | "funcptr"
    structs = {}   # name -> [(type, field)]
    for m in re.finditer(r"typedef\s+enum\s+(\w+)\s*\{", text):
        typedefs[m.group(1)] = "enum"
    for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", text, re.S):
        typedefs[m.group(3)] = "struct"
        fields = []
        for decl in split_top(m.group(2).replace(";", ",;")):
            decl = " ".join(decl.replace(",", " ").split())
            if not decl:
                continue
            fp = re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", decl)  # a function pointer field
            if fp:
                fields.append(("funcptr", fp.group(1)))
                continue
            fm = re.match(r"(.*?)(\w+)\s*(\[[^\]]*\])?$", decl)
            if fm:
                fields.append((fm.group(1).strip() + (fm.group(3) or ""), fm.group(2)))
            else:
                fail(f"cannot parse the field '{decl}' of struct {m.group(3)}")
        structs[m.group(3)] = fields
    for m in re.finditer(r"typedef\s+struct\s+(\w+)\s+(\w+)\s*;", text):
        typedefs[m.group(2)] = "opaque"
    for m in re.finditer(r"typedef\s+struct\s+\w+\s*\*\s*(\w+)\s*;", text):
        typedefs[m.group(1)] = "pointer"
    for m in re.finditer(r"typedef\s+[\w\s\*]+\(\s*\*\s*(\w+)\s*\)", text):
        typedefs[m.group(1)] = "funcptr"

    enumerators = {}
    for m in re.finditer(r"typedef\s+enum\s+\w+\s*\{(.*?)\}", text, re.S):
        for em in re.finditer(r"\b(DAO_\w+)\s*=\s*(\d+)", m.group(1)):
            enumerators[em.group(1)] = int(em.group(2))
    for em in re.finditer(r"X\((DAO_\w+),\s*(\d+),", text):
        enumerators[em.group(1)] = int(em.group(2))
    enumerators.pop("DAO_STATUS_END_", None)
    return protos, typedefs, structs, enumerators


def parse_c(headers, exported):
    """Everything of the headers, and the structs and enumerators of the
    headers that declare at least one function this library exports (a
    header whose functions are not built yet need not be bound)."""
    protos, typedefs, structs, enumerators = {}, {}, {}, {}
    skipped = []
    for name, text in headers.items():
        p, t, st, en = parse_header(text)
        protos.update(p)
        typedefs.update(t)
        if not p or set(p) & exported:
            structs.update(st)
            enumerators.update(en)
        else:
            skipped.append(name)
    if skipped:
        print("note: no function of " + ", ".join(skipped) + " is exported by this build: "
              "its structs and constants are not required")
    return protos, typedefs, structs, enumerators


C_BASE = {
    "int": "Cint", "unsigned": "Cuint", "unsigned int": "Cuint", "size_t": "Csize_t",
    "ptrdiff_t": "Cptrdiff_t",
    "double": "Cdouble", "uint64_t": "UInt64", "int64_t": "Int64", "uintptr_t": "Csize_t",
    "char": "UInt8", "void": "Cvoid", "dao_status": "Cint",
}


def c_to_julia(ctype, typedefs, struct_names):
    t = re.sub(r"\bconst\b", " ", ctype)
    stars = t.count("*")
    base = " ".join(t.replace("*", " ").split())
    if base in C_BASE:
        jt = C_BASE[base]
    else:
        kind = typedefs.get(base)
        if kind == "enum":
            jt = "Cint"
        elif kind == "struct":
            if base not in struct_names:
                return None
            jt = struct_names[base]
        elif kind == "opaque":
            if stars == 0:
                return None
            jt, stars = "Ptr{Cvoid}", stars - 1
        elif kind in ("pointer", "funcptr"):
            jt = "Ptr{Cvoid}"
        else:
            return None
    for _ in range(stars):
        jt = "Ptr{" + jt + "}"
    return jt


JULIA_ALIASES = [
    (r"\bNothing\b", "Cvoid"), (r"\bInt32\b", "Cint"), (r"\bUInt32\b", "Cuint"),
    (r"\bFloat64\b", "Cdouble"), (r"\bUInt\b", "Csize_t"), (r"\bCuchar\b", "UInt8"),
    (r"\bCchar\b", "UInt8"), (r"\bCstring\b", "Ptr{UInt8}"), (r"\bRef\{", "Ptr{"),
]


def norm_julia(t):
    t = "".join(t.split())
    for pat, rep in JULIA_ALIASES:
        t = re.sub(pat, rep, t)
    return t


# --------------------------------------------------------------------------
# The Julia side.
# --------------------------------------------------------------------------


def julia_files():
    files = []
    for dirpath, _, names in os.walk(SRC):
        files += [os.path.join(dirpath, n) for n in sorted(names) if n.endswith(".jl")]
    return sorted(files)


def parse_ccalls(path, text):
    """[(file, line, target, ret, types, nargs)]; target is ('libdao', name),
    ('runtime', name) or ('pointer', expr)."""
    calls = []
    for m in re.finditer(r"(?<![\w@.!])ccall\s*\(", text):
        open_pos = m.end() - 1
        close = matching_paren(text, open_pos)
        line = line_of(text, m.start())
        if close < 0:
            fail(f"{path}:{line}: unbalanced ccall(")
            continue
        args = split_top(text[open_pos + 1:close])
        if len(args) < 3:
            fail(f"{path}:{line}: ccall with fewer than 3 arguments")
            continue
        fn, ret, types = args[0], args[1], args[2]
        tm = re.match(r"^\(\s*:(\w+)\s*,\s*(\w+)\s*\)$", fn)
        if tm:
            target = ("libdao", tm.group(1)) if tm.group(2) == "libdao" else ("lib:" + tm.group(2), tm.group(1))
        elif re.match(r"^:\w+$", fn):
            target = ("runtime", fn[1:])
        else:
            target = ("pointer", fn)
        if not (types.startswith("(") and types.endswith(")")):
            fail(f"{path}:{line}: ccall argument types are not a literal tuple: {types}")
            continue
        tlist = split_top(types[1:-1])
        calls.append((path, line, target, ret, tlist, len(args) - 3))
    for m in re.finditer(r"@ccall\b", text):
        # @ccall [lib.]name(arg::T, ...)::R
        line = line_of(text, m.start())
        rest = text[m.end():]
        nm = re.match(r"\s*([\w.]+)\s*\(", rest)
        if not nm:
            fail(f"{path}:{line}: cannot parse @ccall")
            continue
        open_pos = m.end() + nm.end() - 1
        close = matching_paren(text, open_pos)
        args = split_top(text[open_pos + 1:close])
        rm = re.match(r"\s*::\s*([\w{}]+)", text[close + 1:])
        dotted = nm.group(1).split(".")
        types = [a.split("::", 1)[1] if "::" in a else "?" for a in args]
        if len(dotted) == 2:
            target = ("libdao", dotted[1]) if dotted[0] == "libdao" else ("lib:" + dotted[0], dotted[1])
        else:
            target = ("runtime", dotted[0])
        calls.append((path, line, target, rm.group(1) if rm else "?", types, len(args)))
    return calls


# Non-libdao ccalls the binding may make: the Julia runtime (GC-safe regions)
# and, through function pointers resolved at load time, libuv and semaphores.
ALLOWED_RUNTIME = {"jl_gc_safe_enter", "jl_gc_safe_leave"}
ALLOWED_POINTERS = {"_SEM_INIT[]", "_SEM_WAIT[]", "_SEM_POST[]", "_SEM_DESTROY[]"}


def check_ccalls(exported, protos, typedefs, struct_names, sources):
    calls = []
    for path, text in sources.items():
        calls += parse_ccalls(path, text)
    rel = lambda p: os.path.relpath(p, ROOT)
    called = set()
    n_libdao = 0
    for path, line, target, ret, types, nargs in calls:
        where = f"{rel(path)}:{line}"
        kind, name = target
        if kind == "libdao":
            n_libdao += 1
            called.add(name)
            if name not in exported:
                fail(f"{where}: ccall to {name}, which libdao does not export")
                continue
            if len(types) != nargs:
                fail(f"{where}: {name}: {len(types)} argument types but {nargs} arguments passed")
            if name not in protos:
                fail(f"{where}: {name} has no DAO_API prototype in include/dao")
                continue
            cret, cparams = protos[name]
            if len(types) != len(cparams):
                fail(f"{where}: {name} takes {len(cparams)} parameter(s) in C, the ccall declares {len(types)}")
                continue
            want_ret = c_to_julia(cret, typedefs, struct_names)
            if want_ret is None or norm_julia(ret) != norm_julia(want_ret):
                fail(f"{where}: {name} returns {cret} in C (Julia {want_ret}), the ccall says {ret}")
            for i, (ct, jt) in enumerate(zip(cparams, types)):
                want = c_to_julia(ct, typedefs, struct_names)
                if want is None or norm_julia(jt) != norm_julia(want):
                    fail(f"{where}: {name} parameter {i + 1} is {ct} in C (Julia {want}), the ccall says {jt}")
        elif kind == "runtime":
            if name not in ALLOWED_RUNTIME:
                fail(f"{where}: ccall to {name}: not libdao and not an allowed runtime call")
        elif kind == "pointer":
            if name not in ALLOWED_POINTERS:
                fail(f"{where}: ccall through {name}: not an allowed function pointer")
        else:
            fail(f"{where}: ccall to {name} in library {kind[4:]}: only libdao is called by name")
    missing = sorted(exported - called)
    if missing:
        fail("exported functions with no ccall in the binding: " + ", ".join(missing))
    else:
        ok(f"all {len(exported)} exported dao_* functions are called ({n_libdao} libdao ccalls, "
           f"{len(calls) - n_libdao} runtime/libuv/libc ccalls, all allowed)")
    return called


def check_wrappers_used(exported, sources):
    """Each low-level wrapper dao_x(...) is called outside its own definition."""
    alltext = "\n".join(sources.values())
    unused = []
    for name in sorted(exported):
        defs = len(re.findall(r"(?m)^\s*" + re.escape(name) + r"\s*\(", alltext))
        uses = len(re.findall(r"(?<![\w:.])" + re.escape(name) + r"\s*\(", alltext))
        if defs == 0:
            fail(f"no low-level Julia function {name}(...) is defined")
        elif uses - defs < 1:
            unused.append(name)
    if unused:
        fail("low-level wrappers the high-level layer never calls: " + ", ".join(unused))
    else:
        ok(f"every low-level wrapper is used by the high-level layer")


# --------------------------------------------------------------------------
# Struct layouts and constants, through a small C program.
# --------------------------------------------------------------------------

JULIA_PRIM = {
    "Cint": "int", "Int32": "int", "Cuint": "unsigned", "UInt32": "unsigned",
    "Csize_t": "size_t", "Cptrdiff_t": "ptrdiff_t", "UInt": "uintptr_t", "UInt64": "uint64_t", "Int64": "int64_t",
    "Cdouble": "double", "Float64": "double",
}
PRIMS = ["int", "unsigned", "size_t", "ptrdiff_t", "uintptr_t", "uint64_t", "int64_t", "double", "void*"]


def parse_julia_structs(sources):
    out = {}  # julia name -> (c name, [(field, type)], where)
    for path, text in sources.items():
        lines = text.split("\n")
        raw = open(path).read().split("\n")
        i = 0
        while i < len(lines):
            m = re.match(r"\s*(?:mutable\s+)?struct\s+(\w+)", lines[i])
            if m:
                jname, start = m.group(1), i
                fields, cname = [], None
                i += 1
                while i < len(lines) and not re.match(r"\s*end\b", lines[i]):
                    cm = re.search(r"#\s*C layout:\s*(\w+)", raw[i])
                    if cm:
                        cname = cm.group(1)
                    fm = re.match(r"\s*(\w+)\s*::\s*(.+?)\s*$", lines[i])
                    if fm:
                        fields.append((fm.group(1), fm.group(2)))
                    i += 1
                if cname:
                    out[jname] = (cname, fields, f"{os.path.relpath(path, ROOT)}:{start + 1}")
            i += 1
    return out


def parse_julia_constants(sources):
    consts = {}
    for path, text in sources.items():
        for m in re.finditer(r"(?m)^const\s+(DAO_[A-Z0-9_]+)\s*=\s*(?:Cint\()?\s*(-?\d+)\s*\)?\s*$", text):
            consts[m.group(1)] = (int(m.group(2)), f"{os.path.relpath(path, ROOT)}:{line_of(text, m.start())}")
    return consts


def run_c_probe(jstructs, cstructs, consts):
    lines = ["#include <dao.h>", "#include <stddef.h>", "#include <stdint.h>",
             "#include <stdio.h>", "int main(void) {"]
    for p in PRIMS:
        lines.append(f'  printf("P {p.replace("*", "p")} %zu %zu\\n", sizeof({p}), _Alignof({p}));')
    for jname, (cname, fields, _) in sorted(jstructs.items()):
        if cname not in cstructs:
            continue
        lines.append(f'  printf("S {cname} %zu %zu\\n", sizeof({cname}), _Alignof({cname}));')
        for _, fname in cstructs[cname]:
            lines.append(f'  printf("F {cname} {fname} %zu %zu\\n", offsetof({cname}, {fname}), '
                         f'sizeof((({cname} *)0)->{fname}));')
    for name in sorted(consts):
        lines.append(f'  printf("C {name} %lld\\n", (long long)({name}));')
    lines += ["  return 0;", "}"]
    with tempfile.TemporaryDirectory() as tmp:
        csrc = os.path.join(tmp, "probe.c")
        exe = os.path.join(tmp, "probe")
        with open(csrc, "w") as f:
            f.write("\n".join(lines) + "\n")
        cc = os.environ.get("CC", "cc")
        try:
            # DAO_EXPERIMENTAL: the experimental parts of the headers (whole.h's
            # dao_comm_transport) are bound too, so the probe must see them.
            r = subprocess.run([cc, "-std=c11", "-DDAO_EXPERIMENTAL", "-I", INCLUDE, csrc, "-o", exe],
                               capture_output=True, text=True)
        except OSError as e:
            fail(f"cannot run the C compiler '{cc}' for the layout probe ({e}); set CC")
            return None
        if r.returncode != 0:
            errs = [l for l in r.stderr.split("\n") if "error" in l][:20]
            fail("the layout probe does not compile (a Julia constant or field the C headers "
                 "lack?):\n" + "\n".join(errs))
            return None
        r = subprocess.run([exe], capture_output=True, text=True, check=True)
    prims, ssize, fields, cvals = {}, {}, {}, {}
    for line in r.stdout.split("\n"):
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "P":
            prims[parts[1].replace("voidp", "void*")] = (int(parts[2]), int(parts[3]))
        elif parts[0] == "S":
            ssize[parts[1]] = (int(parts[2]), int(parts[3]))
        elif parts[0] == "F":
            fields[(parts[1], parts[2])] = (int(parts[3]), int(parts[4]))
        elif parts[0] == "C":
            cvals[parts[1]] = int(parts[2])
    return prims, ssize, fields, cvals


def julia_layout(fields, prims, jstructs, memo):
    """[(field, offset, size)], total size, alignment, computed as C does."""
    off, align, out = 0, 1, []
    for fname, ftype in fields:
        t = ftype.strip()
        if t.startswith("Ptr{"):
            size, al = prims["void*"]
        elif t in JULIA_PRIM:
            size, al = prims[JULIA_PRIM[t]]
        elif t in jstructs:
            _, size, al = memo.setdefault(t, julia_layout(jstructs[t][1], prims, jstructs, memo))
        else:
            return None, f"field {fname}::{t} has a type the checker does not know"
        off = (off + al - 1) // al * al
        out.append((fname, off, size))
        off += size
        align = max(align, al)
    total = (off + align - 1) // align * align
    return out, total, align


def check_layouts_and_constants(sources, cstructs, enumerators):
    jstructs = parse_julia_structs(sources)
    consts = parse_julia_constants(sources)
    marked = {j: v for j, v in jstructs.items()}
    if not marked:
        fail("no Julia struct is marked '# C layout: NAME'")
        return
    for cname in sorted(cstructs):
        if not any(v[0] == cname for v in marked.values()):
            fail(f"C struct {cname} has no Julia mirror ('# C layout: {cname}')")
    for jname, (cname, jfields, where) in sorted(marked.items()):
        if cname not in cstructs:
            fail(f"{where}: struct {jname} mirrors {cname}, which is not a struct of the headers")
            continue
        cnames = [f for _, f in cstructs[cname]]
        jnames = [f for f, _ in jfields]
        if cnames != jnames:
            fail(f"{where}: struct {jname} has fields {jnames}; C {cname} has {cnames}")
    probe = run_c_probe(marked, cstructs, consts)
    if probe is None:
        return
    prims, ssize, cfields, cvals = probe
    n_ok = 0
    for jname, (cname, jfields, where) in sorted(marked.items()):
        if cname not in cstructs:
            continue
        layout = julia_layout(jfields, prims, marked, {})
        if layout[0] is None:
            fail(f"{where}: {jname}: {layout[1]}")
            continue
        jl, total, _ = layout
        good = True
        for fname, off, size in jl:
            c = cfields.get((cname, fname))
            if c is None or c != (off, size):
                fail(f"{where}: {jname}.{fname} at offset {off} size {size}; "
                     f"C {cname}.{fname} at {c}")
                good = False
        if total != ssize[cname][0]:
            fail(f"{where}: sizeof {jname} would be {total}; sizeof({cname}) is {ssize[cname][0]}")
            good = False
        if good:
            n_ok += 1
    if n_ok == len(marked):
        ok(f"{n_ok} Julia structs have the C field names, offsets, sizes and total size "
           f"({', '.join(sorted(marked))})")
    bad = 0
    for name, (value, where) in sorted(consts.items()):
        if cvals.get(name) != value:
            fail(f"{where}: {name} = {value} in Julia, {cvals.get(name)} in C")
            bad += 1
    missing = sorted(set(enumerators) - set(consts))
    if missing:
        fail("C enumerators with no Julia constant: " + ", ".join(missing))
    elif not bad:
        ok(f"{len(consts)} DAO_* constants equal their C values; every C enumerator has one")


# --------------------------------------------------------------------------
# Structure of the Julia code: brackets and block keywords against `end`.
# --------------------------------------------------------------------------

OPENERS = {"function", "macro", "module", "baremodule", "struct", "quote", "begin", "let",
           "if", "for", "while", "try", "do"}
TOKEN = re.compile(r"0x[0-9a-fA-F_]+|\d[\d_]*(?:\.\d+)?(?:[eEf][+-]?\d+)?"
                   r"|[A-Za-z_\u00a0-\uffff][\w!\u00a0-\uffff]*|[()\[\]{}]|::|:|\.|@|[^\s\w]",
                   re.UNICODE)


def check_balance(label, text):
    """text is stripped of comments and strings. Returns True when balanced."""
    frames = [("top", [], 1)]  # (bracket, block stack of (keyword, line), line)
    prev = ""
    prevprev = ""
    for m in TOKEN.finditer(text):
        tok = m.group(0)
        line = line_of(text, m.start())
        bracket, blocks, _ = frames[-1]
        quoted = prev == ":" and not re.match(r"[\w)\]}]", prevprev or " ")
        field = prev == "." or prev == "@"
        if tok in "([{":
            frames.append((tok, [], line))
        elif tok in ")]}":
            want = {")": "(", "]": "[", "}": "{"}[tok]
            if bracket != want:
                print(f"  {label}:{line}: '{tok}' closes '{bracket}' opened at line {frames[-1][2]}")
                return False
            if blocks:
                print(f"  {label}:{line}: '{blocks[-1][0]}' (line {blocks[-1][1]}) not closed before '{tok}'")
                return False
            frames.pop()
        elif quoted or field:
            pass
        elif tok == "end":
            if blocks:
                blocks.pop()
            elif bracket != "[":
                print(f"  {label}:{line}: 'end' closes nothing")
                return False
        elif tok == "begin" and bracket == "[" and not blocks:
            pass  # first index
        elif tok in ("for", "if") and bracket in "([" and not blocks:
            pass  # comprehension or generator
        elif tok in OPENERS:
            blocks.append((tok, line))
        elif tok == "type" and prev in ("abstract", "primitive"):
            blocks.append((prev + " type", line))
        prevprev, prev = prev, tok
    if len(frames) != 1:
        print(f"  {label}: '{frames[-1][0]}' opened at line {frames[-1][2]} is never closed")
        return False
    if frames[0][1]:
        kw, line = frames[0][1][-1]
        print(f"  {label}:{line}: '{kw}' is never closed with 'end'")
        return False
    return True


def readme_examples():
    path = os.path.join(HERE, "README.md")
    if not os.path.isfile(path):
        fail("bindings/julia/README.md is missing")
        return []
    with open(path) as f:
        text = f.read()
    return re.findall(r"```julia\n(.*?)```", text, re.S)


def check_structure(sources):
    good = True
    for path, text in sources.items():
        if not check_balance(os.path.relpath(path, ROOT), text):
            fail(f"{os.path.relpath(path, ROOT)}: unbalanced brackets or blocks")
            good = False
    for i, ex in enumerate(readme_examples()):
        if not check_balance(f"README.md example {i + 1}", strip_julia(ex)):
            fail(f"README.md example {i + 1}: unbalanced brackets or blocks")
            good = False
    main = os.path.join(SRC, "Dao.jl")
    included = set(re.findall(r'include\("([^"]+)"\)', open(main).read()))
    for path in julia_files():
        name = os.path.relpath(path, SRC)
        if path != main and name not in included:
            fail(f"Dao/src/{name} is not included by Dao.jl")
            good = False
    for name in included:
        if not os.path.isfile(os.path.join(SRC, name)):
            fail(f"Dao.jl includes {name}, which does not exist")
            good = False
    with open(os.path.join(PKG, "Project.toml")) as f:
        proj = f.read()
    for key in ("name = \"Dao\"", "uuid = ", "Libdl = \"8f399da3-3557-5675-b5ff-fb832c97cbdb\"",
                "julia = "):
        if key not in proj:
            fail(f"Dao/Project.toml lacks {key}")
            good = False
    if good:
        ok("brackets and blocks balance in every Julia file and README example; "
           "every source file is included; Project.toml is complete")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    build = os.path.abspath(sys.argv[1])
    lib = os.path.join(build, "libdao.so")
    if not os.path.exists(lib):
        print(f"FAIL: {lib} does not exist (build libdao first)")
        return 1
    try:
        r = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True)
    except OSError as e:
        print(f"FAIL: cannot run nm ({e}); install binutils")
        return 1
    if r.returncode != 0:
        print("FAIL: nm -D failed: " + r.stderr)
        return 1
    exported = set()
    for line in r.stdout.split("\n"):
        parts = line.split()
        if len(parts) == 3 and parts[1] == "T" and parts[2].startswith("dao_"):
            exported.add(parts[2].split("@")[0])
    print(f"libdao exports {len(exported)} dao_* functions ({lib})")

    headers = read_headers()
    protos, typedefs, cstructs, enumerators = parse_c(headers, exported)
    if exported - set(protos):
        fail("exported functions with no DAO_API prototype in include/dao: "
             + ", ".join(sorted(exported - set(protos))))
    if set(protos) - exported:
        print(f"note: {len(set(protos) - exported)} prototype(s) in include/dao are not exported by "
              "this build and are not checked: " + ", ".join(sorted(set(protos) - exported)))

    files = julia_files()
    tests = [os.path.join(PKG, "test", "runtests.jl")]
    sources = {p: strip_julia(open(p).read()) for p in files}
    jstructs = parse_julia_structs(sources)
    struct_names = {v[0]: k for k, v in jstructs.items()}

    check_ccalls(exported, protos, typedefs, struct_names, sources)
    check_wrappers_used(exported, sources)
    check_layouts_and_constants(sources, cstructs, enumerators)
    all_sources = dict(sources)
    for t in tests:
        if os.path.isfile(t):
            all_sources[t] = strip_julia(open(t).read())
        else:
            fail(f"{os.path.relpath(t, ROOT)} is missing")
    check_structure(all_sources)

    if failures:
        print(f"\n{len(failures)} static check(s) FAILED")
        return 1
    print("\nall static checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
