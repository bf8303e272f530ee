#!/usr/bin/env python3
"""Writes the raw layers of libdao's language bindings from the C headers.

    python3 scripts/gen-bindings.py            # write the three files
    python3 scripts/gen-bindings.py --check    # write nothing; exit 1 with a
                                               # diff when a file is stale
    python3 scripts/gen-bindings.py --root DIR # a copy of the tree (tests)

It reads include/dao.h and the headers it includes (include/dao/*.h; not
whole_mpi.h, which belongs to libdao-mpi), sections under
`#ifdef DAO_EXPERIMENTAL` included, and writes:

    bindings/fortran/src/dao_c.f90       module dao_c: bind(C) interfaces
    bindings/rust/dao-sys/src/lib.rs     crate dao_sys: extern "C" block
    bindings/julia/Dao/src/capi.jl       the ccall layer of package Dao
    bindings/python/dao/_capi.py         the ctypes layer of package dao

What it reads: `DAO_API` prototypes (with the @brief and @param text of
their doxygen comment), `typedef enum` (and the X-macro DAO_STATUS_LIST),
`typedef struct {...}` (public structs), `typedef struct X X` (opaque
handles), `typedef struct X_st *h` (handle pointers), callback typedefs
and object-like `#define DAO_*` constants.

Every convention below is decided by the C type; the only per-function
knowledge is in EXCEPTIONS (what a C declaration cannot say).

C type            Fortran (dao_c)               Rust (dao_sys)     Julia
----------------  ----------------------------  -----------------  -----------
int, enum, status integer(c_int), value         c_int / enum alias Cint
unsigned          integer(c_int)                c_uint             Cuint
size_t            integer(c_size_t)             usize              Csize_t
ptrdiff_t         integer(c_intptr_t)           isize              Cptrdiff_t
uintptr_t         integer(c_intptr_t)           usize              UInt
int64_t/uint64_t  integer(c_int64_t)            i64 / u64          Int64/UInt64
double            real(c_double)                c_double           Cdouble
struct by value   type(T), value                T                  CamelName
opaque T *        type(c_ptr), value            *mut T / *const T  Ptr{Cvoid}
handle, void *    type(c_ptr), value            (same spelling)    Ptr{Cvoid}
callback          type(c_funptr), value         Option<fn>         Ptr{Cvoid}
const char *      character(c_char) (*), in     *const c_char      Ptr{UInt8}
char *            character(c_char) (*), inout  *mut c_char        Ptr{UInt8}
T * (out)         T, intent(inout)              *mut T             Ptr{T}
const T * (num.)  T, dimension(*), intent(in)   *const T           Ptr{T}
const S * struct  type(S), intent(in)           *const S           Ptr{S}
T ** (out)        type(c_ptr), intent(inout)    *mut *mut T        Ptr{Ptr{..}}
T *const * (arr)  type(c_ptr), dimension(*), in *const *mut T      Ptr{Ptr{..}}

Fortran specifics:
- Out-parameters are intent(inout), never intent(out): C leaves them
  unchanged on failure, and intent(out) would let the compiler drop the value
  they held.
- A by-reference parameter is OPTIONAL (absent passes NULL, TS 29113) when
  its @param text says NULL is allowed ("may be NULL", "or NULL", "NULL
  for", "NULL or", "NULL records", "NULL/"), and an array (dimension(*))
  when its @param text starts with "@p n ..." or "Array of @p n ..." for an
  integer parameter n, or when it points to const numbers or is `T *const *`.
- Results and struct fields of type `const char *` are type(c_ptr) (module
  dao turns them into strings); parameters of that type are C strings.
- Callback interfaces (procedures C calls) receive every pointer as
  type(c_ptr), value, except pointers to structs (type(S), intent(in)).
- Fortran ignores case: enum values whose name is a function's name in
  another case (DAO_PLACE_CPU vs dao_place_cpu()) are renamed after their
  enum type (DAO_PLACE_KIND_CPU). A parameter named `type` is named after its
  type (`whole_type`). Fortran has no unsigned types: DAO_UINT64_MAX (-1) is
  what UINT64_MAX reads as. The version macros come from the configured
  include file dao_version.inc (DAO_MODULE_VERSION_NUMBER/_STRING).
- Struct components get default values: 0, c_null_ptr, c_null_funptr, or the
  first value of their enum.

Rust specifics: enums are `c_int` type aliases with one constant per value;
opaque structs come from the `opaque!` macro; C names that are Rust keywords
get a trailing underscore (`type_`, `self_`, `fn_`); structs derive Debug,
Copy and Clone, and Default, PartialEq, Eq and Hash as well when all their
fields are numbers, enums or such structs. A macro named like a function
(DAO_VERSION_NUMBER, dao_version_number()) has that function's return type,
and so have the macros its value is made of.

Julia specifics: structs are named in CamelCase without `dao_`
(dao_allocator_stats is AllocatorStats); handles, callbacks and function
pointer fields are Ptr{Cvoid}; enum values are `Cint`, #define numbers plain
integers; the enum sentinel DAO_STATUS_END_ and the version macros (the
package asks the library) are left out. A call that returns a status is made
GC-safe (`@gcsafe`, it may block), others not, apart from EXCEPTIONS.

Python specifics: the file is data for ctypes, standard library only:
enums are `c_int` aliases under the C name with one constant per value
(STATUS_NAMES maps a status number to its name); structs are
`ctypes.Structure` classes under the C name with the fields of the header;
handles and opaque pointers are `c_void_p` (an int or None in Python), so
`dao_allocator **` is `POINTER(c_void_p)`; `const char *` is `c_char_p`
(bytes), `char *` (a buffer to fill) `POINTER(c_char)`; callbacks are
`CFUNCTYPE` types under the C name (a callback that returns a string
returns `c_void_p`, which ctypes can hand back from Python); macros are
numbers or strings, DAO_STREAM_DEFAULT is None. FUNCTIONS maps every
function's name to (restype, argtypes); bindings/python/dao/_lib.py sets
them on the loaded library and leaves a function the library lacks
unbound, to fail with a clear message only when it is called.

Hand-written helpers live beside the generated files: the Julia helpers
`_STATUS_NAMES`, `_sized` in Dao/src/capi_support.jl.

To add a C function: declare it with DAO_API in include/dao/<area>.h (with
its doxygen comment), run this script, write the safe wrappers by hand
(bindings/fortran/src/dao.f90, bindings/rust/dao/src, bindings/julia/Dao/src)
and their tests. ctest's `bindings_generated` fails until the generated
files are current.
"""

import argparse
import difflib
import os
import re
import sys

GENERATED_NOTE = ("generated by scripts/gen-bindings.py from include/dao/*.h, do not edit; "
                  "regenerate with `python3 scripts/gen-bindings.py`")

OUTPUTS = {
    "fortran": "bindings/fortran/src/dao_c.f90",
    "rust": "bindings/rust/dao-sys/src/lib.rs",
    "julia": "bindings/julia/Dao/src/capi.jl",
    "python": "bindings/python/dao/_capi.py",
}

# What a C declaration cannot say. Keep this short and say why.
EXCEPTIONS = {
    # Fortran: by-reference parameters that may be NULL although their
    # @param text does not say so.
    "fortran_optional": {
        ("dao_kernel_submit", "outputs"),  # NULL with output_count 0, as inputs
    },
    # Julia: calls that do not return a status but may block (they load a
    # driver), so they are made GC-safe.
    "julia_gcsafe": {"dao_place_backend_description"},
    # Julia: calls that return a status but never wait (they read fields of
    # a handle), made without the GC-safe transition.
    "julia_not_gcsafe": {
        "dao_comm_rank", "dao_comm_size", "dao_comm_rank_place", "dao_comm_get_info",
        "dao_whole_supported", "dao_whole_get_info", "dao_whole_get_partition",
        "dao_whole_entry_rank", "dao_whole_get_local", "dao_whole_get_rank_pointer",
        "dao_whole_get_base", "dao_comm_transport_error",
    },
}

# ---------------------------------------------------------------------------
# Reading the headers
# ---------------------------------------------------------------------------

NUMERIC = {"int", "unsigned", "unsigned int", "size_t", "ptrdiff_t", "uintptr_t", "int64_t",
           "uint64_t", "double", "char", "void"}


class CType:
    """A C type: base name, whether the base is const, and one flag per
    pointer level (inner first) saying whether that pointer is const."""

    def __init__(self, base, base_const=False, ptrs=()):
        self.base, self.base_const, self.ptrs = base, base_const, list(ptrs)

    def pointee_const(self, level):
        """Whether what pointer level `level` (0 = innermost) points to is
        const."""
        return self.base_const if level == 0 else self.ptrs[level - 1]

    def __repr__(self):
        return ("const " if self.base_const else "") + self.base + "".join(
            " *const" if c else " *" for c in self.ptrs)


class Decl:
    def __init__(self, name, ctype):
        self.name, self.ctype = name, ctype


def parse_decl(text):
    """`const char *name` -> Decl; `void` -> None."""
    tokens = re.findall(r"\w+|\*", text)
    base_const, ptrs, base = False, [], []
    name = None
    if tokens and re.match(r"\w", tokens[-1]) and len([t for t in tokens if t not in
                                                       ("const", "*")]) > 1:
        name = tokens.pop()
    for t in tokens:
        if t == "const":
            if ptrs:
                ptrs[-1] = True
            else:
                base_const = True
        elif t == "*":
            ptrs.append(False)
        else:
            base.append(t)
    base = " ".join(base)
    if base == "unsigned int":
        base = "unsigned"
    if base == "void" and not ptrs and name is None:
        return None
    return Decl(name, CType(base, base_const, ptrs))


def parse_params(text):
    out = []
    for part in split_top(text):
        d = parse_decl(part)
        if d is not None:
            out.append(d)
    return out


def split_top(text, sep=","):
    parts, depth, cur = [], 0, ""
    for c in text:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    if cur.strip():
        parts.append(cur)
    return parts


def clean_doc(text):
    """Doxygen comment body -> plain lines."""
    lines = []
    for line in text.splitlines():
        line = re.sub(r"^\s*/?\*+/?", "", line)
        line = re.sub(r"\*+/\s*$", "", line)
        lines.append(line.strip())
    return lines


def doc_brief(lines):
    """@brief paragraph, or the first paragraph."""
    out, on = [], False
    for line in lines:
        if line.startswith("@brief"):
            on = True
            out.append(line[len("@brief"):].strip())
            continue
        if on:
            if not line or line.startswith("@"):
                break
            out.append(line)
    if not out:
        for line in lines:
            if not line or line.startswith("@"):
                if out:
                    break
                continue
            out.append(line)
    return first_sentence(plain(" ".join(out)))


def doc_params(lines):
    params, cur = {}, None
    for line in lines:
        m = re.match(r"@param(?:\[[\w,]+\])?\s+(\w+(?:\s*,\s*\w+)*)\s*(.*)", line)
        if m:
            cur = re.findall(r"\w+", m.group(1))
            for name in cur:
                params[name] = m.group(2)
        elif cur and line and not line.startswith("@"):
            for name in cur:
                params[name] = (params[name] + " " + line).strip()
        else:
            cur = None
    return params


def plain(text):
    text = re.sub(r"::(\w)", r"\1", text)
    text = re.sub(r"@p (\w+)", r"\1", text)
    text = re.sub(r"@ref |@c ", "", text)
    return " ".join(text.split())


def first_sentence(text):
    """Up to the first full stop outside parentheses: doc comments here are
    one line, the header says the rest."""
    depth = 0
    for i, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if c == "." and depth == 0 and (i + 1 == len(text) or text[i + 1] == " "):
            return text[:i + 1]
    return text


class Api:
    def __init__(self):
        self.headers = []   # [(header name, [items])]
        self.enums = {}     # name -> Enum
        self.structs = {}   # name -> Struct
        self.opaque = {}    # name -> doc
        self.handles = {}   # typedef name -> (pointee struct name, doc)
        self.callbacks = {}  # name -> Callback
        self.functions = {}  # name -> Function
        self.macros = {}    # name -> Macro


class Item:
    def __init__(self, kind, name, doc="", experimental=False, **kw):
        self.kind, self.name, self.doc, self.experimental = kind, name, doc, experimental
        self.__dict__.update(kw)


def read_api(root):
    global API
    api = API = Api()
    inc = os.path.join(root, "include")
    umbrella = open(os.path.join(inc, "dao.h"), encoding="utf-8").read()
    for m in re.finditer(r'#include\s+"(dao/\w+\.h)"', umbrella):
        path = m.group(1)
        text = open(os.path.join(inc, path), encoding="utf-8").read()
        api.headers.append((os.path.basename(path), read_header(text, api)))
    return api


TOKEN = re.compile(r"""
    (?P<doc>/\*\*<?.*?\*/)
  | (?P<comment>/\*.*?\*/)
  | (?P<pp>\#(?:[^\n\\]|\\\n|\\.)*)
  | (?P<ws>\s+)
  | (?P<extern>extern\s+"C"\s*\{)
  | (?P<decl>[^;{}#/]+(?:\{[^}]*\}[^;]*)?;)
  | (?P<other>.)
""", re.S | re.X)


def read_header(text, api):
    items = []
    doc = []
    experimental = False
    internal = False
    for m in TOKEN.finditer(text):
        if m.group("doc"):
            body = m.group("doc")
            if "@cond" in body:
                internal = True
            if "@endcond" in body:
                internal = False
            if body.startswith("/**<"):
                continue  # trailing docs are read with their declaration
            doc = clean_doc(body[3:])
            continue
        if m.group("comment") or m.group("other") or m.group("extern") \
                or m.group("ws"):
            continue
        if m.group("pp"):
            line = m.group("pp")
            if re.match(r"#\s*ifdef\s+DAO_EXPERIMENTAL", line):
                experimental = True
            elif re.match(r"#\s*endif\s*/\*\s*DAO_EXPERIMENTAL", line):
                experimental = False
            d = re.match(r"#\s*define\s+(DAO_\w+)(\(?)\s*(.*)", line, re.S)
            if d and not internal and not d.group(2) and d.group(1) != "DAO_API" \
                    and not d.group(1).endswith("_H") and not d.group(1).endswith("_"):
                value = " ".join(d.group(3).replace("\\\n", " ").split())
                it = Item("macro", d.group(1), doc_brief(doc), experimental, value=value)
                api.macros[it.name] = it
                items.append(it)
            elif d and d.group(1) == "DAO_STATUS_LIST":
                api.status_list = [(n, int(v), t[:1].upper() + t[1:] + ".") for n, v, t in re.findall(
                    r'X\((DAO_\w+),\s*(\d+),\s*"([^"]*)"\)', line)]
            doc = []
            continue
        decl = " ".join(m.group("decl").split())
        it = read_decl(decl, m.group("decl"), doc, experimental, api)
        if it is not None:
            items.append(it)
        doc = []
    return items


def read_decl(decl, raw, doc, experimental, api):
    brief = doc_brief(doc)
    m = re.match(r"typedef enum (\w+) \{(.*)\} (\w+);", decl)
    if m:
        values = []
        body = raw[raw.index("{") + 1:raw.rindex("}")]
        if "DAO_STATUS_LIST" in body:
            values = [(n, v, t) for n, v, t in api.status_list]
        pending = ""
        for vm in re.finditer(r"/\*\*<(.*?)\*/|/\*\*(.*?)\*/|(DAO_\w+)\s*=\s*(\d+)", body, re.S):
            if vm.group(1) is not None:
                if values:
                    n, v, _ = values[-1]
                    values[-1] = (n, v, plain(" ".join(clean_doc(vm.group(1)))))
            elif vm.group(2) is not None:
                pending = plain(" ".join(clean_doc(vm.group(2))))
            else:
                values.append((vm.group(3), int(vm.group(4)), pending))
                pending = ""
        it = Item("enum", m.group(3), brief, experimental, values=values)
        api.enums[it.name] = it
        return it
    m = re.match(r"typedef struct (\w+) \{(.*)\} (\w+);", decl)
    if m:
        fields = []
        body = raw[raw.index("{") + 1:raw.rindex("}")]
        pending = ""
        for fm in re.finditer(r"/\*\*<(.*?)\*/|/\*\*(.*?)\*/|([^;/]+);", body, re.S):
            if fm.group(1) is not None:
                if fields:
                    fields[-1].doc = first_sentence(plain(" ".join(clean_doc(fm.group(1)))))
            elif fm.group(2) is not None:
                pending = first_sentence(plain(" ".join(clean_doc(fm.group(2)))))
            else:
                text = " ".join(fm.group(3).split())
                fp = re.match(r"(.*)\(\s*\*\s*(\w+)\s*\)\s*\((.*)\)$", text)
                if fp:
                    ret = parse_decl(fp.group(1))
                    f = Decl(fp.group(2), None)
                    f.callback = Item("callback", fp.group(2), "", experimental,
                                      ret=ret.ctype if ret else None,
                                      params=parse_params(fp.group(3)))
                else:
                    f = parse_decl(text)
                    f.callback = None
                f.doc = pending
                pending = ""
                fields.append(f)
        it = Item("struct", m.group(3), brief, experimental, fields=fields)
        api.structs[it.name] = it
        return it
    m = re.match(r"typedef struct (\w+) (\w+);", decl)
    if m:
        it = Item("opaque", m.group(2), brief, experimental)
        api.opaque[it.name] = it
        return it
    m = re.match(r"typedef struct (\w+) \*(\w+);", decl)
    if m:
        it = Item("handle", m.group(2), brief, experimental, pointee=m.group(1))
        api.handles[it.name] = it
        return it
    m = re.match(r"typedef (.*?)\(\s*\*\s*(\w+)\s*\)\s*\((.*)\);", decl)
    if m:
        ret = parse_decl(m.group(1))
        it = Item("callback", m.group(2), brief, experimental,
                  ret=ret.ctype if ret else None, params=parse_params(m.group(3)))
        api.callbacks[it.name] = it
        return it
    m = re.match(r"DAO_API (.*?)\b(\w+)\s*\((.*)\);", decl)
    if m:
        ret = parse_decl(m.group(1))
        it = Item("function", m.group(2), brief, experimental,
                  ret=ret.ctype if ret else None, params=parse_params(m.group(3)),
                  param_docs={k: plain(v) for k, v in doc_params(doc).items()})
        api.functions[it.name] = it
        return it
    if decl.startswith("DAO_API"):
        sys.exit(f"gen-bindings: cannot read the declaration: {decl}")
    return None


def kind_of(api, base):
    if base in NUMERIC:
        return "number"
    if base in api.enums:
        return "enum"
    if base in api.structs:
        return "struct"
    if base in api.opaque:
        return "opaque"
    if base in api.handles:
        return "handle"
    if base in api.callbacks:
        return "callback"
    sys.exit(f"gen-bindings: unknown C type {base}")


def eval_macro(api, name):
    """Value of an object-like macro as a Python int or str, or None."""
    v = api.macros[name].value
    if re.fullmatch(r"-?\d+", v):
        return int(v)
    expr = v.strip()
    if '"' in expr:  # string made of literals and STR(MACRO) calls
        out = ""
        for sm in re.finditer(r'"([^"]*)"|\w+\((\w+)\)', expr):
            out += sm.group(1) if sm.group(1) is not None else str(eval_macro(api, sm.group(2)))
        return out
    if re.fullmatch(r"[\w\s*+()-]+", expr) and "(" + "dao_" not in expr:
        names = re.findall(r"[A-Za-z_]\w*", expr)
        if all(n in api.macros for n in names):
            env = {n: eval_macro(api, n) for n in names}
            return eval(expr, {"__builtins__": {}}, env)  # only numbers and + - *
    return None


def null_cast(api, name):
    """`((dao_stream)0)` -> "dao_stream"."""
    m = re.fullmatch(r"\(\s*\(\s*(\w+)\s*\)\s*0\s*\)", api.macros[name].value)
    return m.group(1) if m else None


def macro_type_function(api, name):
    """The function whose return type a macro takes: its own lower-case name,
    or the one of the macro it is part of."""
    if name.lower() in api.functions:
        return api.functions[name.lower()]
    for other, m in api.macros.items():
        if other.lower() in api.functions and re.search(r"\b" + name + r"\b", m.value):
            return api.functions[other.lower()]
    return None


def param_doc(fn, name):
    """The @param text of a parameter; "As for f()." gives f's text of the
    parameter of the same name."""
    text = fn.param_docs.get(name, "")
    m = re.match(r"As for (\w+)\(\)", text)
    if m and m.group(1) in API.functions:
        return param_doc(API.functions[m.group(1)], name)
    return text


def param_is_optional(fn, p):
    if (fn.name, p.name) in EXCEPTIONS["fortran_optional"]:
        return True
    return bool(re.search(r"may be NULL|\bor NULL\b|(^|[;:.(] )NULL (for|or|records)\b|NULL/",
                          param_doc(fn, p.name), re.I))


def param_array_length(fn, p):
    """The integer parameter that counts the elements p points to, if its
    @param text starts with "@p n ..." or "Array of @p n ..."."""
    m = re.match(r"(?:array of )?(\w+) ", param_doc(fn, p.name), re.I)
    if m:
        for q in fn.params:
            if q.name == m.group(1) and not q.ctype.ptrs:
                return q.name
    return None


# ---------------------------------------------------------------------------
# Text helpers
# ---------------------------------------------------------------------------

def wrap(text, width, prefix):
    """Words of `text` in lines of at most `width` columns, each starting
    with `prefix` (and a space when there is a prefix)."""
    lead = prefix + " " if prefix else ""
    lines, cur = [], ""
    for w in text.split():
        if cur and len(lead + cur + " " + w) > width:
            lines.append(lead + cur)
            cur = w
        else:
            cur = cur + " " + w if cur else w
    if cur:
        lines.append(lead + cur)
    return lines


def with_note(doc, note):
    """`doc` with `(note)` before its final full stop."""
    doc = doc.rstrip()
    if doc.endswith("."):
        doc = doc[:-1]
    return f"{doc} ({note})."


def header_sections(api):
    """[(header, items)] without the headers that declare nothing."""
    return [(h, items) for h, items in api.headers if items]


# ---------------------------------------------------------------------------
# Fortran
# ---------------------------------------------------------------------------

# ptrdiff_t (signed, pointer-sized: the sizes of PyTorch's allocator ABI) is
# c_intptr_t, of the same width on every platform libdao supports; Fortran's
# c_ptrdiff_t is newer (Fortran 2018) than the compilers the module targets.
F_KIND = {"int": "c_int", "unsigned": "c_int", "size_t": "c_size_t", "ptrdiff_t": "c_intptr_t",
          "uintptr_t": "c_intptr_t",
          "int64_t": "c_int64_t", "uint64_t": "c_int64_t"}
F_IMPORT_ORDER = ["c_int", "c_int64_t", "c_intptr_t", "c_size_t", "c_double", "c_char", "c_ptr",
                  "c_funptr"]


class Fortran:
    def __init__(self, api):
        self.api = api
        lower_names = set(api.functions)
        self.const_names = {}
        for e in api.enums.values():
            names = [n for n, _, _ in e.values]
            if any(n.lower() in lower_names for n in names):
                prefix = os.path.commonprefix(names)
                prefix = prefix[:prefix.rfind("_") + 1]
                for n in names:
                    self.const_names[n] = e.name.upper() + "_" + n[len(prefix):]
            else:
                for n in names:
                    self.const_names[n] = n

    def scalar(self, base):
        """(declaration, import) of a number, enum or by-value struct."""
        k = kind_of(self.api, base)
        if k == "enum":
            return "integer(c_int)", "c_int"
        if k == "struct":
            return f"type({base})", base
        if base == "double":
            return "real(c_double)", "c_double"
        if base in F_KIND:
            return f"integer({F_KIND[base]})", F_KIND[base]
        sys.exit(f"gen-bindings: no Fortran type for {base}")

    def is_pointer_value(self, t):
        """Types that are one type(c_ptr) passed by value."""
        k = kind_of(self.api, t.base)
        if k == "handle" and not t.ptrs:
            return True
        if len(t.ptrs) == 1 and (k == "opaque" or t.base == "void"):
            return True
        return False

    def dummy(self, fn, p, callback=False):
        """(lines of the declaration, imports) of a dummy argument."""
        t, api = p.ctype, self.api
        k = kind_of(api, t.base)
        name = self.arg_name(p)
        if not t.ptrs and k != "handle":
            if k == "callback":
                return f"type(c_funptr), value :: {name}", {"c_funptr"}
            decl, imp = self.scalar(t.base)
            return f"{decl}, value :: {name}", {imp}
        if self.is_pointer_value(t):
            return f"type(c_ptr), value :: {name}", {"c_ptr"}
        if callback:
            if k == "struct" and len(t.ptrs) == 1:
                return f"type({t.base}), intent(in) :: {name}", {t.base}
            return f"type(c_ptr), value :: {name}", {"c_ptr"}
        optional = ", optional" if param_is_optional(fn, p) else ""
        # what the outermost pointer points to
        inner_const = t.pointee_const(len(t.ptrs) - 1)
        intent = "intent(in)" if inner_const else "intent(inout)"
        if t.base == "char" and len(t.ptrs) == 1:
            return (f"character(kind=c_char), dimension(*), {intent}{optional} :: {name}",
                    {"c_char"})
        if len(t.ptrs) == 2 or (k == "handle" and len(t.ptrs) == 1):
            array = inner_const or param_array_length(fn, p)
            dim = ", dimension(*)" if array else ""
            return f"type(c_ptr){dim}, {intent}{optional} :: {name}", {"c_ptr"}
        if len(t.ptrs) == 1:
            decl, imp = self.scalar(t.base)
            array = (inner_const and k != "struct") or param_array_length(fn, p)
            dim = ", dimension(*)" if array else ""
            return f"{decl}{dim}, {intent}{optional} :: {name}", {imp}
        sys.exit(f"gen-bindings: no Fortran convention for {t} {p.name} of {fn.name}")

    def result(self, t):
        if t is None:
            return None, set()
        k = kind_of(self.api, t.base)
        if not t.ptrs and k in ("number", "enum", "struct"):
            decl, imp = self.scalar(t.base)
            return decl, {imp}
        if t.ptrs or k == "handle":
            return "type(c_ptr)", {"c_ptr"}
        sys.exit(f"gen-bindings: no Fortran result type for {t}")

    def arg_name(self, p):
        if p.name == "type":
            return p.ctype.base[len("dao_"):]
        return p.name

    def interface(self, fn, callback=False):
        out = []
        args = [self.arg_name(p) for p in fn.params]
        res, imports = self.result(fn.ret)
        decls = []
        for p in fn.params:
            d, imp = self.dummy(fn, p, callback)
            decls.append(d)
            imports |= imp
        what = "function" if res else "subroutine"
        bind = "bind(C)" if callback else f'bind(C, name="{fn.name}")'
        head = f"    {what} {fn.name}({', '.join(args)})"
        tail = f" {bind}" + (" result(r)" if res else "")
        if len(head + tail) <= 100:
            out.append(head + tail)
        else:
            out += self.continued(f"    {what} {fn.name}(", args, ")")
            out.append("        " + tail.strip())
        out.append("      import :: " + ", ".join(self.sort_imports(imports)))
        out += ["      " + d for d in decls]
        if res:
            out.append(f"      {res} :: r")
        out.append(f"    end {what} {fn.name}")
        return out

    def continued(self, head, args, close):
        lines, cur = [], head
        indent = " " * len(head)
        for i, a in enumerate(args):
            piece = a + (", " if i + 1 < len(args) else close)
            if len(cur) + len(piece.rstrip()) > 98 and cur.strip() != head.strip():
                lines.append(cur.rstrip() + " &")
                cur = indent
            cur += piece
        lines.append(cur.rstrip() + " &")
        return lines

    def public(self, names):
        """`public :: a, b, ...` over continuation lines."""
        lines = self.continued("  public :: ", names, "")
        lines[-1] = lines[-1][:-len(" &")]
        return lines

    def sort_imports(self, imports):
        intrinsic = [i for i in F_IMPORT_ORDER if i in imports]
        return intrinsic + sorted(i for i in imports if i not in F_IMPORT_ORDER)

    def component(self, f):
        t = f.ctype
        if f.callback is not None:
            return f"type(c_funptr) :: {f.name} = c_null_funptr"
        k = kind_of(self.api, t.base)
        if t.ptrs or k == "handle":
            return f"type(c_ptr) :: {f.name} = c_null_ptr"
        if k == "callback":
            return f"type(c_funptr) :: {f.name} = c_null_funptr"
        if k == "struct":
            return f"type({t.base}) :: {f.name}"
        decl, _ = self.scalar(t.base)
        if k == "enum":
            first = self.api.enums[t.base].values[0][0]
            return f"{decl} :: {f.name} = {self.const_names[first]}"
        return f"{decl} :: {f.name} = 0"

    def emit(self):
        api = self.api
        o = []
        o.append("! " + GENERATED_NOTE.replace("; ", ";\n! "))
        o.append("!")
        o += [
            "!> The C API of libdao as Fortran sees it: constants, bind(C) structs,",
            "!> callback interfaces and one bind(C) interface per exported function, under",
            "!> the C name. Module `dao` re-exports all of this. Functions return a status,",
            "!> take handles as type(c_ptr) and strings as NUL-terminated character arrays",
            "!> (`\"caching\"//c_null_char`); out-parameters are intent(inout) (C leaves",
            "!> them unchanged on failure), and OPTIONAL where C accepts NULL. `const char *`",
            "!> results are type(c_ptr) (dao_string() reads one). Enum values whose name is",
            "!> a function's in another case are renamed after their enum type",
            "!> (DAO_PLACE_KIND_CPU). The conventions are documented in the generator.",
            "module dao_c",
            "  use, intrinsic :: iso_c_binding, only: c_int, c_int64_t, c_intptr_t, c_size_t, "
            "c_double, &",
            "                                          c_char, c_ptr, c_funptr, c_null_ptr, &",
            "                                          c_null_funptr",
            "  implicit none",
            "  private",
            "",
            "  include \"dao_version.inc\"",
        ]
        has_u64 = False
        for header, items in header_sections(api):
            consts, types = [], []
            for it in items:
                if it.kind == "macro":
                    if header == "version.h":
                        continue  # dao_version.inc, configured by CMake
                    value = eval_macro(api, it.name)
                    cast = null_cast(api, it.name)
                    if isinstance(value, int):
                        consts.append(f"  integer(c_int), parameter, public :: {it.name} = {value}")
                    elif cast:
                        if it.doc:
                            consts.append(f"  !> {with_note(it.doc, 'C: a NULL ' + cast)}")
                        consts.append(f"  type(c_ptr), parameter, public :: {it.name} = c_null_ptr")
                    else:
                        sys.exit(f"gen-bindings: no Fortran constant for {it.name}")
                elif it.kind == "enum":
                    for n, v, d in it.values:
                        if n.endswith("_") and d:
                            consts.append(f"  !> {d}")
                        consts.append(f"  integer(c_int), parameter, public :: "
                                      f"{self.const_names[n]} = {v}")
                elif it.kind == "struct":
                    has_u64 |= any(f.ctype is not None and f.ctype.base == "uint64_t"
                                   for f in it.fields)
                    types.append("")
                    note = ", experimental: DAO_EXPERIMENTAL" if it.experimental else ""
                    types += wrap(with_note(it.doc, f"C: {it.name}{note}"), 100, "  !>")
                    types.append(f"  type, bind(C), public :: {it.name}")
                    types += ["    " + self.component(f) for f in it.fields]
                    types.append(f"  end type {it.name}")
            if consts or types:
                o.append("")
                o.append(f"  ! --- {header} ---")
                o += consts
                o += types
        for fn in api.functions.values():
            has_u64 |= any(p.ctype.base == "uint64_t" for p in fn.params)
        if has_u64:
            o += ["",
                  "  !> UINT64_MAX as it reads in a signed 64-bit Fortran integer (Fortran has",
                  "  !> no unsigned types): for example dao_tensor_access_info%next_use.",
                  "  integer(c_int64_t), parameter, public :: DAO_UINT64_MAX = -1_c_int64_t"]
        # callbacks
        cbs = list(api.callbacks.values())
        o += ["", "  ! --- callbacks: write a bind(C) procedure with one of these interfaces",
              "  !     and pass c_funloc of it. ---"]
        o += self.public([c.name for c in cbs])
        o.append("  abstract interface")
        for i, cb in enumerate(cbs):
            if i:
                o.append("")
            o += wrap(with_note(cb.doc, f"C: {cb.name}"), 100, "    !>")
            o += self.interface(cb, callback=True)
        o.append("  end interface")
        # functions
        o += ["", f"  ! --- the {len(api.functions)} functions, by header ---"]
        for header, items in header_sections(api):
            names = [it.name for it in items if it.kind == "function"]
            if not names:
                continue
            o.append(f"  ! {header} ({len(names)})")
            o += self.public(names)
        o += ["", "  interface"]
        first = True
        for header, items in header_sections(api):
            fns = [it for it in items if it.kind == "function"]
            if not fns:
                continue
            if not first:
                o.append("")
            first = False
            o.append("    ! " + "-" * (72 - len(header)) + " " + header)
            for i, fn in enumerate(fns):
                if i:
                    o.append("")
                note = "Experimental (DAO_EXPERIMENTAL in C). " if fn.experimental else ""
                o += wrap(note + fn.doc, 100, "    !>")
                o += self.interface(fn)
        o += ["  end interface", "end module dao_c", ""]
        return "\n".join(o)


# ---------------------------------------------------------------------------
# Rust
# ---------------------------------------------------------------------------

R_NUM = {"int": "c_int", "unsigned": "c_uint", "size_t": "usize", "ptrdiff_t": "isize",
         "uintptr_t": "usize",
         "int64_t": "i64", "uint64_t": "u64", "double": "c_double", "char": "c_char",
         "void": "c_void"}
R_KEYWORDS = {"type", "self", "fn", "ref", "mod", "move", "match", "loop", "impl", "use",
              "where", "crate", "super", "in", "box", "async", "await", "dyn", "struct"}


def rust_name(name):
    return name + "_" if name in R_KEYWORDS else name


def rust_doc(text):
    return text.replace("[", "\\[").replace("]", "\\]")


class Rust:
    def __init__(self, api):
        self.api = api

    def ty(self, t):
        base = R_NUM.get(t.base, t.base)
        for level in range(len(t.ptrs)):
            base = ("*const " if t.pointee_const(level) else "*mut ") + base
        return base

    def params(self, params):
        return [f"{rust_name(p.name)}: {self.ty(p.ctype)}" for p in params]

    def callback_type(self, cb, lead, indent, end):
        """Lines of `lead + Option<...> + end`, rustfmt style."""
        ret = f" -> {self.ty(cb.ret)}" if cb.ret else ""
        ps = self.params(cb.params)
        one = f"{lead}Option<unsafe extern \"C\" fn({', '.join(ps)}){ret}>{end}"
        if len(one) <= 100:
            return [one]
        pad = " " * indent
        inner = f"Option<unsafe extern \"C\" fn({', '.join(ps)}){ret}>{end}"
        if len(pad + "    " + inner) <= 100 and lead.rstrip().endswith(":"):
            return [lead.rstrip(), pad + "    " + inner]
        mid = f"{pad}    unsafe extern \"C\" fn({', '.join(ps)}){ret},"
        if len(mid) <= 100:
            return [f"{lead}Option<", mid, f"{pad}>{end}"]
        return ([f"{lead}Option<", f"{pad}    unsafe extern \"C\" fn("]
                + [f"{pad}        {p}," for p in ps] + [f"{pad}    ){ret},", f"{pad}>{end}"])

    def plain_data(self, name):
        """Whether every field is a number, an enum or such a struct."""
        for f in self.api.structs[name].fields:
            if f.callback is not None or f.ctype.ptrs:
                return False
            k = kind_of(self.api, f.ctype.base)
            if k == "struct":
                if not self.plain_data(f.ctype.base):
                    return False
            elif k not in ("number", "enum"):
                return False
        return True

    def emit(self):
        api = self.api
        o = ["// " + GENERATED_NOTE.replace("; ", ";\n// "), ""]
        o += [
            "//! Raw FFI declarations of libdao's public C API (`#include <dao.h>`).",
            "//!",
            "//! Every function that `libdao.so` exports is declared here with the types of",
            "//! the C headers, one Rust item per C item and under the same name:",
            "//!",
            "//! - `typedef enum` types are `c_int` aliases with one constant per value",
            "//!   (so values a newer library adds are plain numbers, never undefined",
            "//!   behaviour);",
            "//! - structs are `#[repr(C)]` with the fields of the header, in order;",
            "//! - opaque handles are zero-sized `#[repr(C)]` types used behind pointers;",
            "//! - callback types are `Option<unsafe extern \"C\" fn(..)>` (NULL is `None`).",
            "//!",
            "//! The declarations are generated from `include/dao/*.h` (with",
            "//! `DAO_EXPERIMENTAL` defined: `dao_comm_transport` and its functions are",
            "//! experimental; `dao_comm_create_mpi` of libdao-mpi is not declared). The",
            "//! crate's tests check them against the headers with the system C compiler.",
            "//!",
            "//! The library is found by `build.rs`: from `DAO_LIB_DIR` when it is set, else",
            "//! with `pkg-config --libs-only-L --libs-only-l dao`.",
            "//!",
            "//! This crate is `unsafe` to use; the `dao` crate is the safe binding. The",
            "//! documentation of each function (ownership, thread safety, what each status",
            "//! means) is in the C headers.",
            "#![no_std]",
            "#![allow(non_camel_case_types)]",
            "",
            "use core::ffi::{c_char, c_double, c_int, c_uint, c_void};",
            "use core::marker::{PhantomData, PhantomPinned};",
            "",
            "/// Declares an opaque C struct: zero-sized, not constructible, `!Send`,",
            "/// `!Sync` and `!Unpin`, usable only behind a pointer.",
            "macro_rules! opaque {",
            "    ($(#[$doc:meta] $name:ident),* $(,)?) => {$(",
            "        #[$doc]",
            "        #[repr(C)]",
            "        pub struct $name {",
            "            _data: [u8; 0],",
            "            _marker: PhantomData<(*mut u8, PhantomPinned)>,",
            "        }",
            "    )*};",
            "}",
        ]
        for header, items in header_sections(api):
            sec = []
            opaque = []
            for it in items:
                if it.kind == "opaque":
                    opaque.append((it.doc, it.name))
                elif it.kind == "handle":
                    opaque.append((f"Opaque object that `{it.name}` points to.", it.pointee))
            if opaque:
                sec.append("opaque!(")
                for doc, name in opaque:
                    sec.append(f"    /// {rust_doc(doc)}")
                    sec.append(f"    {name},")
                sec += [");", ""]
            for it in items:
                doc = rust_doc(it.doc)
                if it.kind == "macro":
                    value = eval_macro(api, it.name)
                    cast = null_cast(api, it.name)
                    fn = macro_type_function(api, it.name)
                    ty = self.ty(fn.ret) if fn else "c_int"
                    sec += wrap(doc, 100, "///")
                    if isinstance(value, str):
                        sec.append(f"pub const {it.name}: &str = \"{value}\";")
                    elif cast:
                        sec.append(f"pub const {it.name}: {cast} = core::ptr::null_mut();")
                    elif re.fullmatch(r"-?\d+", it.value):
                        sec.append(f"pub const {it.name}: {ty} = {value};")
                    elif value is not None:
                        expr = " ".join(it.value.strip()[1:-1].split()) \
                            if it.value.strip().startswith("(") else it.value
                        sec.append(f"pub const {it.name}: {ty} =")
                        sec.append(f"    {expr};")
                    else:
                        sys.exit(f"gen-bindings: no Rust constant for {it.name}")
                    sec.append("")
                elif it.kind == "enum":
                    sec += wrap(f"`{it.name}`: {doc}", 100, "///")
                    sec.append(f"pub type {it.name} = c_int;")
                    for n, v, d in it.values:
                        sec += wrap(rust_doc(d) or f"`{n}`.", 100, "///")
                        sec.append(f"pub const {n}: {it.name} = {v};")
                    sec.append("")
                elif it.kind == "handle":
                    sec += wrap(f"`{it.name}`: {doc}", 100, "///")
                    sec.append(f"pub type {it.name} = *mut {it.pointee};")
                    sec.append("")
                elif it.kind == "callback":
                    sec += wrap(f"`{it.name}`: {doc}", 100, "///")
                    sec += self.callback_type(it, f"pub type {it.name} = ", 0, ";")
                    sec.append("")
                elif it.kind == "struct":
                    note = (" Experimental (`DAO_EXPERIMENTAL` in C): the layout may change "
                            "without a SONAME bump." if it.experimental else "")
                    sec += wrap(f"`{it.name}`: {doc}{note}", 100, "///")
                    sec.append("#[repr(C)]")
                    derives = "Debug, Copy, Clone"
                    if self.plain_data(it.name):
                        derives += ", Default, PartialEq, Eq, Hash"
                    sec.append(f"#[derive({derives})]")
                    sec.append(f"pub struct {it.name} {{")
                    for f in it.fields:
                        sec += wrap(rust_doc(f.doc) or f"`{f.name}`.", 100, "    ///")
                        if f.callback is not None:
                            sec += self.callback_type(f.callback, f"    pub {rust_name(f.name)}: ",
                                                      4, ",")
                        else:
                            sec.append(f"    pub {rust_name(f.name)}: {self.ty(f.ctype)},")
                    sec += ["}", ""]
            if sec:
                while sec and sec[-1] == "":
                    sec.pop()
                o += ["", "// " + "-" * (73 - len(header)) + " " + header, ""] + sec
        o += ["", "// " + "-" * 63 + " functions", "", "extern \"C\" {"]
        first = True
        for header, items in header_sections(api):
            fns = [it for it in items if it.kind == "function"]
            if not fns:
                continue
            if not first:
                o.append("")
            first = False
            o.append(f"    // {header}")
            for fn in fns:
                o += wrap(("Experimental (`DAO_EXPERIMENTAL` in C). " if fn.experimental
                           else "") + rust_doc(fn.doc), 100, "    ///")
                ret = f" -> {self.ty(fn.ret)}" if fn.ret else ""
                ps = self.params(fn.params)
                one = f"    pub fn {fn.name}({', '.join(ps)}){ret};"
                head = f"    pub fn {fn.name}({', '.join(ps)})"
                if len(one) < 100:  # as rustfmt lays it out
                    o.append(one)
                elif len(one) == 100 and ret:
                    o += [head, f"       {ret};"]
                else:
                    o.append(f"    pub fn {fn.name}(")
                    o += [f"        {p}," for p in ps]
                    o.append(f"    ){ret};")
        o += ["}", ""]
        text = "\n".join(o)
        while "\n\n\n\n" in text:
            text = text.replace("\n\n\n\n", "\n\n\n")
        return text


# ---------------------------------------------------------------------------
# Julia
# ---------------------------------------------------------------------------

J_NUM = {"int": "Cint", "unsigned": "Cuint", "size_t": "Csize_t", "ptrdiff_t": "Cptrdiff_t",
         "uintptr_t": "UInt",
         "int64_t": "Int64", "uint64_t": "UInt64", "double": "Cdouble", "char": "UInt8",
         "void": "Cvoid"}


def julia_struct_name(name):
    return "".join(w.capitalize() for w in name[len("dao_"):].split("_"))


class Julia:
    def __init__(self, api):
        self.api = api

    def ty(self, t):
        k = kind_of(self.api, t.base)
        stars = len(t.ptrs)
        if k == "number":
            base = J_NUM[t.base]
        elif k == "enum":
            base = "Cint"
        elif k == "struct":
            base = julia_struct_name(t.base)
        elif k == "opaque":
            base, stars = "Ptr{Cvoid}", stars - 1
        else:  # handle, callback
            base = "Ptr{Cvoid}"
        for _ in range(stars):
            base = "Ptr{" + base + "}"
        return base

    def gcsafe(self, fn):
        if fn.name in EXCEPTIONS["julia_gcsafe"]:
            return True
        if fn.name in EXCEPTIONS["julia_not_gcsafe"]:
            return False
        return fn.ret is not None and fn.ret.base == "dao_status" and not fn.ret.ptrs

    def function(self, fn):
        args = [p.name for p in fn.params]
        types = [self.ty(p.ctype) for p in fn.params]
        tuple_ = "(" + ", ".join(types) + ("," if len(types) == 1 else "") + ")"
        ret = self.ty(fn.ret) if fn.ret else "Cvoid"
        macro = "@gcsafe " if self.gcsafe(fn) else ""
        head = f"{fn.name}({', '.join(args)}) ="
        call = f"{macro}ccall((:{fn.name}, libdao), {ret}, {tuple_}" + \
            "".join(", " + a for a in args) + ")"
        if len(head + " " + call) <= 100:
            return [head + " " + call]
        lines = wrap_list(f"{fn.name}(", args, ") =", " " * (len(fn.name) + 1))
        if len("    " + call) <= 100:
            return lines + ["    " + call]
        cont = " " * (4 + len(macro) + len("ccall("))
        first = f"    {macro}ccall((:{fn.name}, libdao), {ret},"
        out = lines + [first]
        if len(cont + tuple_ + ",") <= 100:
            out.append(cont + tuple_ + ",")
        else:
            out += wrap_list(cont + "(", types, "),", cont + " ")
        out += wrap_list(cont, args, ")", cont)
        return out

    def emit(self):
        api = self.api
        o = ["# " + GENERATED_NOTE.replace("; ", ";\n# "), "#"]
        o += [
            "# The low-level layer: the C API as it is. Every exported libdao function has",
            "# a Julia function of the same name that makes the `ccall` and returns what C",
            "# returns (a `dao_status` as a `Cint`, pointers as `Ptr`), constants for every",
            "# enum value, and a Julia `struct` for every public C struct with the same",
            "# fields in the same order (named in CamelCase: dao_allocator_stats is",
            "# AllocatorStats), so that its layout is the C layout.",
            "#",
            "# Handles (`dao_allocator *`, `dao_stream`, ...) are `Ptr{Cvoid}`. Out-",
            "# parameters are `Ptr{T}`: pass a `Ref{T}`. Strings are `Ptr{UInt8}`: pass a",
            "# `String` (check it holds no NUL) or `C_NULL`. Calls that may wait for",
            "# another thread are made GC-safe (`@gcsafe`); see library.jl. Helpers over",
            "# these declarations are in capi_support.jl.",
        ]
        for header, items in header_sections(api):
            sec = []
            for it in items:
                if it.kind == "macro":
                    if header == "version.h":
                        continue
                    value = eval_macro(api, it.name)
                    if isinstance(value, int) and re.fullmatch(r"-?\d+", it.value):
                        sec.append(f"const {it.name} = {value}")
                elif it.kind == "enum":
                    if sec and sec[-1] != "":
                        sec.append("")
                    for n, v, _ in it.values:
                        if not n.endswith("_"):
                            sec.append(f"const {n} = Cint({v})")
                    sec.append("")
                elif it.kind == "struct":
                    if sec and sec[-1] != "":
                        sec.append("")
                    jn = julia_struct_name(it.name)
                    note = (" Experimental (`DAO_EXPERIMENTAL` in C): the layout may change "
                            "without a SONAME bump." if it.experimental else "")
                    sec += ['"""', f"    {jn}", ""]
                    sec += wrap(with_note(it.doc, f"C `{it.name}`") + note, 80, "")
                    sec += ['"""', f"struct {jn}", f"    # C layout: {it.name}"]
                    for f in it.fields:
                        if f.callback is not None:
                            t = "Ptr{Cvoid}"
                        else:
                            t = self.ty(f.ctype)
                        sec.append(f"    {f.name}::{t}")
                    sec += ["end", ""]
            while sec and sec[-1] == "":
                sec.pop()
            if sec:
                o += ["", "# --- " + header + " " + "-" * (72 - len(header)), ""] + sec
        o += ["", "# " + "=" * 77, f"# The {len(api.functions)} functions, in the order of the "
              "headers.", "# " + "=" * 77]
        for header, items in header_sections(api):
            fns = [it for it in items if it.kind == "function"]
            if not fns:
                continue
            o += ["", f"# --- {header} ---"]
            for fn in fns:
                o += wrap(("Experimental (DAO_EXPERIMENTAL in C). " if fn.experimental
                           else "") + fn.doc, 100, "#")
                o += self.function(fn)
        o.append("")
        return "\n".join(o)


def wrap_list(head, items, close, indent):
    lines, cur = [], head
    for i, a in enumerate(items):
        piece = a + (", " if i + 1 < len(items) else close)
        if len(cur) + len(piece.rstrip()) > 100 and cur.strip() != head.strip():
            lines.append(cur.rstrip())
            cur = indent
        cur += piece
    lines.append(cur.rstrip())
    return lines


# ---------------------------------------------------------------------------
# Python (ctypes)
# ---------------------------------------------------------------------------

P_NUM = {"int": "c_int", "unsigned": "c_uint", "size_t": "c_size_t", "uintptr_t": "c_size_t",
         "int64_t": "c_int64", "uint64_t": "c_uint64", "double": "c_double", "char": "c_char",
         "ptrdiff_t": "c_ssize_t"}


class Python:
    def __init__(self, api):
        self.api = api

    def ty(self, t, callback_result=False):
        """The ctypes spelling of a C type; None for void."""
        if t is None:
            return "None"
        k = kind_of(self.api, t.base)
        stars = len(t.ptrs)
        if k == "opaque":
            base, stars = "c_void_p", stars - 1
        elif k == "handle":
            base = "c_void_p"
        elif k in ("callback", "enum", "struct"):
            base = t.base
        elif t.base == "void":
            if not stars:
                return "None"
            base, stars = "c_void_p", stars - 1
        elif t.base == "char" and stars and t.pointee_const(0):
            base, stars = "c_char_p", stars - 1
            if callback_result and not stars:
                base = "c_void_p"  # ctypes cannot return a str from Python
        else:
            base = P_NUM[t.base]
        for _ in range(stars):
            base = f"POINTER({base})"
        return base

    def cfunctype(self, cb):
        args = [self.ty(cb.ret, callback_result=True)] + [self.ty(p.ctype) for p in cb.params]
        return "CFUNCTYPE(" + ", ".join(args) + ")"

    def emit(self):
        api = self.api
        o = ["# " + GENERATED_NOTE.replace("; ", ";\n# "), "#"]
        o += [
            '"""The C API of libdao as ctypes sees it (the raw layer of package dao).',
            "",
            "Every C item under its C name: enum types are c_int aliases with one",
            "constant per value, structs are ctypes.Structure classes with the fields of",
            "the header (size-tagged ones start with struct_size: set it to",
            "ctypes.sizeof(the class)), handles and opaque pointers are c_void_p,",
            "callbacks are CFUNCTYPE types (keep a reference to every callback object",
            "for as long as C may call it). FUNCTIONS maps each exported function to",
            "(restype, argtypes); dao._lib sets them on the loaded library. The",
            "documentation of each function (ownership, thread safety, what each status",
            "means) is in the C headers.",
            '"""',
            "",
            "from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_int,",
            "                    c_int64, c_size_t, c_ssize_t, c_uint, c_uint64, c_void_p)",
            "",
            "# Names used only by some versions of the headers.",
            "_ = (c_char, c_char_p, c_double, c_int64, c_size_t, c_ssize_t, c_uint, c_uint64,",
            "     c_void_p)",
        ]
        struct_names = []
        for header, items in header_sections(api):
            sec = []
            for it in items:
                doc = it.doc
                if it.kind == "macro":
                    value = eval_macro(api, it.name)
                    cast = null_cast(api, it.name)
                    if doc:
                        sec += wrap(doc, 100, "#")
                    if isinstance(value, str):
                        sec.append(f'{it.name} = "{value}"')
                    elif cast:
                        sec.append(f"{it.name} = None")
                    elif isinstance(value, int):
                        sec.append(f"{it.name} = {value}")
                    else:
                        sys.exit(f"gen-bindings: no Python constant for {it.name}")
                elif it.kind == "enum":
                    sec += wrap(f"{it.name}: {doc}", 100, "#")
                    sec.append(f"{it.name} = c_int")
                    for n, v, _ in it.values:
                        if not n.endswith("_"):
                            sec.append(f"{n} = {v}")
                elif it.kind == "callback":
                    sec += wrap(f"{it.name}: {doc}", 100, "#")
                    sec += wrap_list(f"{it.name} = CFUNCTYPE(",
                                     [self.ty(it.ret, callback_result=True)]
                                     + [self.ty(p.ctype) for p in it.params], ")",
                                     " " * len(f"{it.name} = CFUNCTYPE("))
                elif it.kind == "struct":
                    struct_names.append(it.name)
                    note = (" Experimental (DAO_EXPERIMENTAL in C): the layout may change "
                            "without a SONAME bump." if it.experimental else "")
                    sec += ["", ""]
                    fields = []
                    for f in it.fields:
                        if f.callback is not None:
                            # a function pointer field: its CFUNCTYPE under a name
                            t = f"_{it.name}_{f.name}"
                            cb = f.callback
                            sec += wrap_list(f"{t} = CFUNCTYPE(",
                                             [self.ty(cb.ret, callback_result=True)]
                                             + [self.ty(p.ctype) for p in cb.params], ")",
                                             " " * len(f"{t} = CFUNCTYPE("))
                        else:
                            t = self.ty(f.ctype)
                        fields.append((f.name, t))
                    if fields and sec[-1] != "":
                        sec += ["", ""]
                    sec.append(f"class {it.name}(Structure):")
                    sec += wrap(f'"""{doc}{note}"""', 100, "   ")
                    sec.append("    _fields_ = [")
                    for name, t in fields:
                        sec.append(f'        ("{name}", {t}),')
                    sec += ["    ]", "", ""]
                else:
                    continue
            while sec and sec[-1] == "":
                sec.pop()
            while sec and sec[0] == "":
                sec.pop(0)
            if sec:
                o += ["", "", "# --- " + header + " " + "-" * (72 - len(header)), ""] + sec
        o += ["", "", "# Status number -> its name (codes this version knows).", "STATUS_NAMES = {"]
        o += [f'    {v}: "{n}",' for n, v, _ in api.status_list]
        o += ["}", "", "# Every public struct, for layout checks.", "STRUCTS = ("]
        o += [f"    {n}," for n in struct_names]
        o += [")", "", f"# The {len(api.functions)} functions, in the order of the headers: name ->",
              "# (restype, argtypes).", "FUNCTIONS = {"]
        for header, items in header_sections(api):
            fns = [it for it in items if it.kind == "function"]
            if not fns:
                continue
            o.append(f"    # {header}")
            for fn in fns:
                sig = f"{fn.name}({', '.join(p.name for p in fn.params)})"
                o += wrap(("Experimental (DAO_EXPERIMENTAL in C). " if fn.experimental
                           else "") + f"{sig}: {fn.doc}", 100, "    #")
                args = [self.ty(p.ctype) for p in fn.params]
                one = f'    "{fn.name}": ({self.ty(fn.ret)}, ({", ".join(args)}' + \
                    ("," if len(args) == 1 else "") + ")),"
                if len(one) <= 100:
                    o.append(one)
                else:
                    o.append(f'    "{fn.name}": ({self.ty(fn.ret)}, (')
                    o += wrap_list("        ", args, ",)),", "        ")
        o += ["}", ""]
        text = "\n".join(o)
        while "\n\n\n\n" in text:
            text = text.replace("\n\n\n\n", "\n\n\n")
        return text


# ---------------------------------------------------------------------------

def generate(root):
    api = read_api(root)
    return {
        OUTPUTS["fortran"]: Fortran(api).emit(),
        OUTPUTS["rust"]: Rust(api).emit(),
        OUTPUTS["julia"]: Julia(api).emit(),
        OUTPUTS["python"]: Python(api).emit(),
    }


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 and print a diff if a file is not current")
    ap.add_argument("--root", default=os.path.dirname(here),
                    help="the source tree (default: the one holding this script)")
    args = ap.parse_args()
    stale = False
    for rel, text in generate(args.root).items():
        path = os.path.join(args.root, rel)
        try:
            old = open(path, encoding="utf-8").read()
        except FileNotFoundError:
            old = ""
        if old == text:
            continue
        if args.check:
            stale = True
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), text.splitlines(True), "a/" + rel, "b/" + rel))
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {rel}")
    if stale:
        print("gen-bindings: the files above are not what scripts/gen-bindings.py writes from "
              "include/; run `python3 scripts/gen-bindings.py` and commit the result",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
