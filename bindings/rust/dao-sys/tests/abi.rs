//! Checks the hand-written declarations of `dao-sys` against the C headers,
//! with the system C compiler (`$CC`, else `cc`):
//!
//! - every `DAO_API` function of the headers is declared, and no other;
//! - every function's Rust signature, written back as C, is the type of the C
//!   function (`-Werror` on assigning the function to such a pointer), and
//!   the same for the callback types;
//! - every struct of the headers is declared with the same fields in the same
//!   order, and has the size, alignment and field offsets and sizes of C;
//! - every enum value and `#define` constant has the value of C.
//!
//! The C programs define `DAO_EXPERIMENTAL`, so the experimental transport
//! interface of whole.h is checked too (its operations' types included);
//! whole_mpi.h, the header of the separate libdao-mpi, is left out.
//!
//! The headers come from `DAO_SYS_INCLUDE_DIR`, found by build.rs
//! (`DAO_INCLUDE_DIR`, pkg-config, or the source tree).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::mem::{align_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

use dao_sys::*;

const LIB_RS: &str = include_str!("../src/lib.rs");

fn include_dir() -> PathBuf {
    let dir = env!("DAO_SYS_INCLUDE_DIR");
    assert!(
        !dir.is_empty() && Path::new(dir).join("dao.h").exists(),
        "dao-sys tests need libdao's headers: set DAO_INCLUDE_DIR to the directory that holds \
         dao.h and rebuild (build.rs found {dir:?})"
    );
    PathBuf::from(dir)
}

/// Every generated C program starts with this: the experimental items of
/// whole.h (`dao_comm_transport` and its functions) are declared too.
const PRELUDE: &str = "#define DAO_EXPERIMENTAL 1\n";

/// Headers of other libraries than libdao, not declared by dao-sys:
/// whole_mpi.h is libdao-mpi's (`dao_comm_create_mpi`, needs `<mpi.h>`).
const OTHER_LIBRARIES: &[&str] = &["whole_mpi.h"];

/// All header text: dao.h and dao/*.h (but not [`OTHER_LIBRARIES`]).
fn headers() -> String {
    let inc = include_dir();
    let mut names: Vec<PathBuf> = fs::read_dir(inc.join("dao"))
        .expect("read include/dao")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "h"))
        .filter(|p| {
            !OTHER_LIBRARIES
                .iter()
                .any(|o| p.file_name().is_some_and(|n| n == *o))
        })
        .collect();
    names.sort();
    names.insert(0, inc.join("dao.h"));
    names
        .iter()
        .map(|p| fs::read_to_string(p).expect("read header"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Removes `/* */` and `//` comments.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let block = rest.find("/*");
        let line = rest.find("//");
        match (block, line) {
            (Some(b), l) if l.map_or(true, |l| b < l) => {
                out.push_str(&rest[..b]);
                let end = rest[b + 2..].find("*/").expect("unterminated comment");
                rest = &rest[b + 2 + end + 2..];
                out.push(' ');
            }
            (_, Some(l)) => {
                out.push_str(&rest[..l]);
                rest = rest[l..].find('\n').map_or("", |n| &rest[l + n..]);
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The identifier that starts `text`.
fn ident(text: &str) -> &str {
    let end = text.find(|c| !is_ident(c)).unwrap_or(text.len());
    &text[..end]
}

/// Text between the parenthesis at `open` and its match, and what follows.
fn parens(text: &str, open: usize) -> (&str, &str) {
    assert_eq!(&text[open..open + 1], "(");
    let mut depth = 0;
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return (&text[open + 1..open + i], &text[open + i + 1..]);
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced parentheses in {text}");
}

/// A Rust FFI type written as C.
fn c_type(rust: &str) -> String {
    let rust = rust.trim();
    if let Some(rest) = rust.strip_prefix("*mut ") {
        return format!("{} *", c_type(rest));
    }
    if let Some(rest) = rust.strip_prefix("*const ") {
        return format!("{} const *", c_type(rest));
    }
    match rust {
        "c_void" => "void",
        "c_char" => "char",
        "c_int" => "int",
        "c_uint" => "unsigned int",
        "c_double" | "f64" => "double",
        "usize" => "size_t",
        "isize" => "ptrdiff_t",
        "u64" => "uint64_t",
        "i64" => "int64_t",
        other => {
            assert!(
                other.starts_with("dao_"),
                "no C spelling for the Rust type `{other}`"
            );
            other
        }
    }
    .to_string()
}

/// `name: Type, ...` as a C parameter list.
fn c_params(args: &str) -> String {
    let list: Vec<String> = args
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(|a| c_type(a.split_once(':').expect("name: type").1))
        .collect();
    if list.is_empty() {
        "void".into()
    } else {
        list.join(", ")
    }
}

fn c_return(rest: &str) -> (String, &str) {
    let rest = rest.trim_start();
    match rest.strip_prefix("->") {
        Some(r) => {
            let end = r.find([';', '>', ',']).unwrap_or(r.len());
            (c_type(&r[..end]), &r[end..])
        }
        None => ("void".into(), rest),
    }
}

struct RustFn {
    name: String,
    c_pointer_decl: String, // "ret (*p)(params)"
}

/// `pub fn` declarations of the extern block of lib.rs.
fn rust_functions() -> Vec<RustFn> {
    let text = collapse(&strip_comments(LIB_RS));
    let block = &text[text.find("extern \"C\" {").expect("extern block")..];
    let mut out = Vec::new();
    let mut rest = block;
    while let Some(at) = rest.find("pub fn ") {
        let after = &rest[at + 7..];
        let name = ident(after).to_string();
        let open = after.find('(').unwrap();
        let (args, tail) = parens(after, open);
        let (ret, tail) = c_return(tail);
        out.push(RustFn {
            c_pointer_decl: format!("{ret} (*p)({})", c_params(args)),
            name,
        });
        rest = tail;
    }
    out
}

/// `pub type NAME = Option<unsafe extern "C" fn(..) -> ..>` of lib.rs.
fn rust_callbacks() -> Vec<(String, String)> {
    let text = collapse(&strip_comments(LIB_RS));
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("pub type ") {
        let after = &rest[at + 9..];
        let name = ident(after).to_string();
        let def = after[name.len()..]
            .trim_start()
            .trim_start_matches('=')
            .trim_start();
        rest = after;
        if let Some(f) = def.strip_prefix("Option< unsafe extern \"C\" fn") {
            let f = f.trim_start();
            let (args, tail) = parens(f, 0);
            let (ret, _) = c_return(tail);
            out.push((name, format!("{ret} (*q)({})", c_params(args))));
        } else if let Some(f) = def.strip_prefix("Option<unsafe extern \"C\" fn") {
            let (args, tail) = parens(f, 0);
            let (ret, _) = c_return(tail);
            out.push((name, format!("{ret} (*q)({})", c_params(args))));
        }
    }
    out
}

/// The function-pointer fields of the struct `name` of lib.rs, with their
/// types written as C declarations of a pointer `q`.
fn rust_pointer_fields(name: &str) -> Vec<(String, String)> {
    let text = collapse(&strip_comments(LIB_RS));
    let start = text
        .find(&format!("pub struct {name} {{"))
        .expect("the struct in lib.rs");
    let body = &text[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
    let mut out = Vec::new();
    for field in body.split("pub ").skip(1) {
        let field_name = c_field(ident(field)).to_string();
        if let Some(at) = field.find("extern \"C\" fn") {
            let f = field[at + 13..].trim_start();
            let (args, tail) = parens(f, 0);
            let (ret, _) = c_return(tail);
            out.push((field_name, format!("{ret} (*q)({})", c_params(args))));
        }
    }
    out
}

/// Names of the `DAO_API` functions of the headers.
fn header_functions(headers: &str) -> BTreeSet<String> {
    let declarations: String = strip_comments(headers)
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    let text = collapse(&declarations);
    let mut out = BTreeSet::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("DAO_API ") {
        let after = &rest[at + 8..];
        let open = after.find('(').expect("a function declaration");
        let before = after[..open].trim_end();
        let start = before.rfind(|c: char| !is_ident(c)).map_or(0, |i| i + 1);
        let name = &before[start..];
        assert!(name.starts_with("dao_"), "DAO_API on {name:?}");
        out.insert(name.to_string());
        rest = &after[open..];
    }
    out
}

/// `typedef struct NAME { fields } NAME;` of the headers: names and fields.
fn header_structs(headers: &str) -> BTreeMap<String, Vec<String>> {
    let text = collapse(&strip_comments(headers));
    let mut out = BTreeMap::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("typedef struct ") {
        let after = &rest[at + 15..];
        let name = ident(after).to_string();
        let tail = after[name.len()..].trim_start();
        rest = after;
        if let Some(body) = tail.strip_prefix('{') {
            let body = &body[..body.find('}').expect("struct end")];
            let fields = body
                .split(';')
                .map(str::trim)
                .filter(|f| !f.is_empty())
                .map(|f| {
                    // A function pointer: `ret (*name)(params)`.
                    if let Some(at) = f.find("(*") {
                        return ident(f[at + 2..].trim_start()).to_string();
                    }
                    let start = f.rfind(|c: char| !is_ident(c)).map_or(0, |i| i + 1);
                    f[start..].to_string()
                })
                .collect();
            out.insert(name, fields);
        }
    }
    out
}

/// Enum values and `#define` constants of the headers (not include guards,
/// macros with arguments or DAO_API).
fn header_constants(headers: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in headers.lines() {
        let t = line.trim_start();
        if let Some(def) = t
            .strip_prefix("#define ")
            .or_else(|| t.strip_prefix("#  define "))
        {
            let name = ident(def.trim_start());
            let function_like = def.trim_start()[name.len()..].starts_with('(');
            if name.starts_with("DAO_")
                && !name.ends_with("_H")
                && !function_like
                && name != "DAO_API"
            {
                out.insert(name.to_string());
            }
        }
        if t.starts_with("DAO_") && ident(t).len() < t.len() {
            let name = ident(t);
            if t[name.len()..].trim_start().starts_with('=') {
                out.insert(name.to_string());
            }
        }
        for part in t.split("X(").skip(1) {
            let name = ident(part);
            if name.starts_with("DAO_") && part[name.len()..].starts_with(',') {
                out.insert(name.to_string());
            }
        }
    }
    out
}

/// `pub const NAME` of lib.rs.
fn rust_constants() -> BTreeSet<String> {
    LIB_RS
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("pub const "))
        .map(|l| ident(l).to_string())
        .collect()
}

/// `#[repr(C)] pub struct NAME { pub field: .. }` of lib.rs (not the opaque
/// types of the `opaque!` macro), with their fields.
fn rust_structs() -> BTreeMap<String, Vec<String>> {
    let text = collapse(&strip_comments(LIB_RS));
    let mut out = BTreeMap::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("pub struct ") {
        let after = &rest[at + 11..];
        rest = after;
        let name = ident(after).to_string();
        if name.is_empty() {
            continue; // `pub struct $name` in the macro
        }
        let body = &after[after.find('{').unwrap() + 1..after.find('}').unwrap()];
        let fields = body
            .split("pub ")
            .skip(1)
            .map(|f| c_field(ident(f)).to_string())
            .collect();
        out.insert(name, fields);
    }
    out
}

/// The C name of a Rust field: C names that are Rust keywords (`type`,
/// `self`) are spelled with a trailing underscore in dao-sys.
fn c_field(rust: &str) -> &str {
    match rust {
        "type_" => "type",
        "self_" => "self",
        other => other,
    }
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

fn scratch_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dao-sys-{what}-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

/// Compiles `source`; with `run`, also runs it and gives its output.
fn compile(what: &str, source: &str, run: bool) -> String {
    let dir = scratch_dir(what);
    let c_file = dir.join(format!("{what}.c"));
    let exe = dir.join(what);
    fs::write(&c_file, format!("{PRELUDE}{source}")).unwrap();
    let mut cmd = Command::new(cc());
    cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg("-I")
        .arg(include_dir());
    if run {
        cmd.arg("-o").arg(&exe);
    } else {
        cmd.arg("-fsyntax-only");
    }
    let out = cmd
        .arg(&c_file)
        .output()
        .unwrap_or_else(|e| panic!("could not run the C compiler `{}` (set CC): {e}", cc()));
    assert!(
        out.status.success(),
        "the C compiler rejected the generated {what}.c (kept in {}):\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let result = if run {
        let out = Command::new(&exe).output().expect("run the layout program");
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    } else {
        String::new()
    };
    let _ = fs::remove_dir_all(&dir);
    result
}

#[test]
fn every_exported_function_is_declared() {
    let c: BTreeSet<String> = header_functions(&headers());
    let rust: BTreeSet<String> = rust_functions().into_iter().map(|f| f.name).collect();
    assert_eq!(
        c.len(),
        129,
        "the headers of this version declare 129 functions (103, and 26 of whole.h)"
    );
    let missing: Vec<_> = c.difference(&rust).collect();
    let extra: Vec<_> = rust.difference(&c).collect();
    assert!(missing.is_empty(), "not declared in dao-sys: {missing:?}");
    assert!(
        extra.is_empty(),
        "declared in dao-sys but not in the headers: {extra:?}"
    );
}

#[test]
fn every_function_links() {
    // Taking each function's address makes the linker resolve it in libdao.
    macro_rules! addresses {
        ($($f:ident),* $(,)?) => {
            vec![$((stringify!($f), $f as *const ())),*]
        };
    }
    let fns = addresses!(
        dao_version_number,
        dao_version_string,
        dao_status_string,
        dao_last_error,
        dao_place_cpu,
        dao_place_cuda,
        dao_place_cuda_pinned,
        dao_place_cuda_managed,
        dao_place_sim,
        dao_place_device_count,
        dao_place_memory_info,
        dao_place_kind_name,
        dao_place_backend_description,
        dao_alloc,
        dao_free,
        dao_used,
        dao_used_internal,
        dao_pluggable_malloc,
        dao_pluggable_free,
        dao_pluggable_record_stream,
        dao_cupy_malloc,
        dao_cupy_free,
        dao_interop_get_stats,
        dao_trace_start,
        dao_trace_stop,
        dao_trace_flush,
        dao_trace_mark,
        dao_trace_get_stats,
        dao_allocator_set_oom_callback,
        dao_place_allocator,
        dao_place_default_config,
        dao_sim_configure,
        dao_sim_set_profile,
        dao_sim_get_profile,
        dao_sim_get_cost,
        dao_sim_reset_costs,
        dao_sim_op_name,
        dao_stream_create,
        dao_stream_wrap,
        dao_stream_native,
        dao_stream_place,
        dao_stream_synchronize,
        dao_stream_query,
        dao_stream_wait_event,
        dao_stream_destroy,
        dao_event_create,
        dao_event_record,
        dao_event_query,
        dao_event_synchronize,
        dao_event_destroy,
        dao_memcpy_async,
        dao_launch_host_func,
        dao_allocator_create,
        dao_allocator_alloc,
        dao_allocator_free,
        dao_allocator_usable_size,
        dao_allocator_trim,
        dao_allocator_get_stats,
        dao_allocator_reset_peak_stats,
        dao_allocator_info,
        dao_allocator_get_stat,
        dao_allocator_reset_accumulated_stats,
        dao_allocator_record_stream,
        dao_allocator_snapshot,
        dao_snapshot_segment_count,
        dao_snapshot_segment,
        dao_snapshot_block,
        dao_snapshot_destroy,
        dao_allocator_snapshot_json,
        dao_allocator_destroy,
        dao_recycle_create,
        dao_recycle_acquire,
        dao_recycle_submit,
        dao_recycle_take,
        dao_recycle_close,
        dao_recycle_get_stats,
        dao_recycle_destroy,
        dao_buffer_retain,
        dao_buffer_release,
        dao_buffer_data,
        dao_buffer_shape,
        dao_buffer_size,
        dao_buffer_place,
        dao_buffer_sequence,
        dao_collection_create,
        dao_collection_add,
        dao_collection_find,
        dao_collection_close,
        dao_collection_destroy,
        dao_tiered_create,
        dao_tiered_set_score_callback,
        dao_tensor_create,
        dao_tensor_write,
        dao_tensor_read,
        dao_tensor_get_state,
        dao_tensor_release,
        dao_kernel_submit,
        dao_tiered_synchronize,
        dao_tiered_get_stats,
        dao_tiered_get_link_stats,
        dao_tiered_trim,
        dao_tensor_retire,
        dao_tiered_destroy,
        dao_comm_create_local,
        dao_comm_destroy,
        dao_comm_rank,
        dao_comm_size,
        dao_comm_rank_place,
        dao_comm_get_info,
        dao_comm_barrier,
        dao_whole_type_name,
        dao_whole_location_name,
        dao_whole_supported,
        dao_whole_create,
        dao_whole_destroy,
        dao_whole_get_info,
        dao_whole_get_partition,
        dao_whole_entry_rank,
        dao_whole_get_local,
        dao_whole_get_rank_pointer,
        dao_whole_get_base,
        dao_whole_gather,
        dao_whole_scatter,
        dao_whole_gather_collective,
        dao_whole_scatter_collective,
        dao_whole_store,
        dao_whole_load,
        dao_comm_create_transport,
        dao_comm_transport_error,
    );
    assert!(fns.iter().all(|(_, p)| !p.is_null()));
    let listed: BTreeSet<String> = fns.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(
        listed,
        header_functions(&headers()),
        "the list above is every function"
    );
}

#[test]
fn signatures_match_the_headers() {
    let mut src = String::from("#include <dao.h>\n#include <stdint.h>\n\nvoid dao_sys_check(void);\nvoid dao_sys_check(void) {\n");
    for f in rust_functions() {
        src.push_str(&format!(
            "  {{ {} = {}; (void)p; }}\n",
            f.c_pointer_decl, f.name
        ));
    }
    let callbacks = rust_callbacks();
    assert_eq!(
        callbacks.len(),
        4,
        "dao_host_fn, dao_kernel_fn, dao_score_fn and dao_oom_callback"
    );
    for (name, decl) in &callbacks {
        src.push_str(&format!(
            "  {{ {name} a = 0; {decl} = a; {name} b = q; (void)b; }}\n"
        ));
    }
    // The operations of the (experimental) transport: each field's type.
    let fields = rust_pointer_fields("dao_comm_transport");
    assert_eq!(fields.len(), 17, "the operations of dao_comm_transport");
    for (field, decl) in &fields {
        src.push_str(&format!(
            "  {{ {decl} = 0; dao_comm_transport t; t.{field} = q; (void)t; }}\n"
        ));
    }
    src.push_str("}\n");
    compile("signatures", &src, false);
}

#[test]
fn constants_match_the_headers() {
    let c = header_constants(&headers());
    let rust = rust_constants();
    let missing: Vec<_> = c.difference(&rust).collect();
    let extra: Vec<_> = rust.difference(&c).collect();
    assert!(
        missing.is_empty(),
        "constants of the headers not in dao-sys: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "constants of dao-sys not in the headers: {extra:?}"
    );

    macro_rules! numbers {
        ($($name:ident),* $(,)?) => {
            vec![$((stringify!($name), $name as i64)),*]
        };
    }
    let numbers = numbers!(
        DAO_VERSION_MAJOR,
        DAO_VERSION_MINOR,
        DAO_VERSION_PATCH,
        DAO_VERSION_NUMBER,
        DAO_OK,
        DAO_ERR_INVALID_ARGUMENT,
        DAO_ERR_OUT_OF_MEMORY,
        DAO_ERR_INVALID_POINTER,
        DAO_ERR_UNSUPPORTED,
        DAO_ERR_NO_DEVICE,
        DAO_ERR_TIMEOUT,
        DAO_ERR_CLOSED,
        DAO_ERR_BACKEND,
        DAO_ERR_INTERNAL,
        DAO_ERR_INVALID_STATE,
        DAO_ERR_BUSY,
        DAO_ERR_NOT_FOUND,
        DAO_STATUS_END_,
        DAO_PLACE_CPU,
        DAO_PLACE_CUDA,
        DAO_PLACE_CUDA_PINNED,
        DAO_PLACE_CUDA_MANAGED,
        DAO_PLACE_SIM,
        DAO_PLACE_KIND_COUNT,
        DAO_STAT_ALLOCATED_BYTES,
        DAO_STAT_ALLOCATED_BLOCKS,
        DAO_STAT_RESERVED_BYTES,
        DAO_STAT_RESERVED_SEGMENTS,
        DAO_STAT_ACTIVE_BYTES,
        DAO_STAT_ACTIVE_BLOCKS,
        DAO_STAT_INACTIVE_SPLIT_BYTES,
        DAO_STAT_INACTIVE_SPLIT_BLOCKS,
        DAO_STAT_REQUESTED_BYTES,
        DAO_STAT_METRIC_COUNT,
        DAO_STAT_POOL_ALL,
        DAO_STAT_POOL_SMALL,
        DAO_STAT_POOL_LARGE,
        DAO_STAT_POOL_COUNT,
        DAO_BLOCK_FREE,
        DAO_BLOCK_ALLOCATED,
        DAO_BLOCK_PENDING_FREE,
        DAO_SIM_MAX_DEVICES,
        DAO_INTEROP_STREAM_CACHE,
        DAO_SIM_OP_ALLOC,
        DAO_SIM_OP_FREE,
        DAO_SIM_OP_CREATE,
        DAO_SIM_OP_MAP,
        DAO_SIM_OP_SET_ACCESS,
        DAO_SIM_OP_UNMAP,
        DAO_SIM_OP_RELEASE,
        DAO_SIM_OP_EVENT_RECORD,
        DAO_SIM_OP_EVENT_QUERY,
        DAO_SIM_OP_SYNCHRONIZE,
        DAO_SIM_OP_HOST_FUNC,
        DAO_SIM_OP_COPY_TO_DEVICE,
        DAO_SIM_OP_COPY_TO_HOST,
        DAO_SIM_OP_COPY_ON_DEVICE,
        DAO_SIM_OP_COUNT,
        DAO_RECYCLE_MAX_DIMS,
        DAO_TENSOR_UNINITIALIZED,
        DAO_TENSOR_ON_DEVICE,
        DAO_TENSOR_ON_HOST,
        DAO_TENSOR_IN_TRANSIT,
        DAO_COMM_LOCAL_MAX_RANKS,
        DAO_WHOLE_CONTINUOUS,
        DAO_WHOLE_CHUNKED,
        DAO_WHOLE_DISTRIBUTED,
        DAO_WHOLE_DEVICE,
        DAO_WHOLE_HOST,
    );
    // The two that are not numbers are checked below; every other constant
    // must be in the list above.
    let listed: BTreeSet<String> = numbers.iter().map(|(n, _)| n.to_string()).collect();
    let unlisted: Vec<_> = rust
        .iter()
        .filter(|n| !listed.contains(*n))
        .filter(|n| *n != "DAO_VERSION_STRING" && *n != "DAO_STREAM_DEFAULT")
        .collect();
    assert!(
        unlisted.is_empty(),
        "add these constants to the test: {unlisted:?}"
    );

    let mut src = String::from(
        "#include <dao.h>\n#include <stdint.h>\n#include <stdio.h>\n\nint main(void) {\n",
    );
    for (name, _) in &numbers {
        src.push_str(&format!(
            "  printf(\"{name} %lld\\n\", (long long){name});\n"
        ));
    }
    src.push_str(
        "  printf(\"DAO_STREAM_DEFAULT %lld\\n\", (long long)(uintptr_t)DAO_STREAM_DEFAULT);\n",
    );
    src.push_str("  printf(\"DAO_VERSION_STRING %s\\n\", DAO_VERSION_STRING);\n  return 0;\n}\n");
    let out = compile("constants", &src, true);
    let c_values: BTreeMap<&str, &str> = out
        .lines()
        .map(|l| l.split_once(' ').expect("NAME VALUE"))
        .collect();
    for (name, value) in &numbers {
        assert_eq!(c_values[name], value.to_string(), "value of {name}");
    }
    assert_eq!(c_values["DAO_STREAM_DEFAULT"], "0");
    assert!(DAO_STREAM_DEFAULT.is_null());
    assert_eq!(c_values["DAO_VERSION_STRING"], DAO_VERSION_STRING);
}

/// (struct, size, align, [(field, offset, size)]) as Rust lays them out.
type Layout = (
    &'static str,
    usize,
    usize,
    Vec<(&'static str, usize, usize)>,
);

fn field_size<S, F>(_: fn(&S) -> &F) -> usize {
    size_of::<F>()
}

macro_rules! layouts {
    ($($s:ident { $($f:ident),* $(,)? }),* $(,)?) => {
        vec![$(
            (
                stringify!($s),
                size_of::<$s>(),
                align_of::<$s>(),
                vec![$((
                    stringify!($f),
                    std::mem::offset_of!($s, $f),
                    field_size(|s: &$s| &s.$f),
                )),*],
            )
        ),*]
    };
}

fn rust_layouts() -> Vec<Layout> {
    layouts!(
        dao_place { kind, device },
        dao_allocator_stats {
            struct_size,
            allocated_bytes,
            peak_allocated_bytes,
            requested_bytes,
            reserved_bytes,
            peak_reserved_bytes,
            live_blocks,
            alloc_count,
            free_count,
            failed_alloc_count,
            system_alloc_count,
            system_free_count,
            largest_free_block,
            alloc_retry_count,
        },
        dao_interop_stats {
            struct_size,
            kind,
            cached_streams,
            idle_streams,
            streams_wrapped,
            streams_evicted,
            streams_retired,
            failed_mallocs,
            failed_frees,
        },
        dao_trace_stats {
            struct_size,
            active,
            records,
            lost,
            pending,
            bytes_written,
        },
        dao_stat {
            current,
            peak,
            allocated,
            freed
        },
        dao_segment_info {
            struct_size,
            address,
            size,
            mapped_bytes,
            pool,
            stream,
            expandable,
            block_count,
        },
        dao_block_info {
            struct_size,
            address,
            size,
            requested_size,
            state,
            stream
        },
        dao_sim_cost {
            struct_size,
            count,
            bytes,
            ns
        },
        dao_recycle_stats {
            struct_size,
            created,
            free,
            queued,
            held,
            peak_free,
            peak_queued,
            peak_held,
            acquired,
            submitted,
            taken,
            acquire_waits,
            take_waits,
            acquire_wait_ns,
            take_wait_ns,
            timeouts,
        },
        dao_tensor_access_info {
            struct_size,
            tensor,
            bytes,
            now,
            last_use,
            next_use,
            queued_uses,
            dirty,
        },
        dao_tiered_stats {
            struct_size,
            kernels_submitted,
            kernels_run,
            evictions,
            bytes_evicted,
            fetches,
            bytes_fetched,
            prefetches,
            prefetches_in_time,
            stall_ns,
            device_bytes,
            peak_device_bytes,
            host_bytes,
            peak_host_bytes,
            tensors_live,
            device_range_bytes,
            trims,
            idle_trims,
        },
        dao_tiered_link_stats {
            struct_size,
            bytes_to_device,
            bytes_to_host,
            copies_to_device,
            copies_to_host,
            copy_ns_to_device,
            copy_ns_to_host,
            copy_ns,
            stall_ns,
            kernel_ns,
            hidden_ns,
            to_device_bytes_per_s,
            to_host_bytes_per_s,
            staged_bytes,
            staging_bytes,
            host_pageable,
            staged,
        },
        dao_whole_desc {
            struct_size,
            type_,
            location,
            total_size,
            entry_size,
        },
        dao_whole_range {
            struct_size,
            rank,
            first_entry,
            entry_count,
            byte_offset,
            byte_size,
        },
        dao_whole_info {
            struct_size,
            type_,
            location,
            total_size,
            entry_size,
            entry_count,
            rank,
            size,
            place,
        },
        dao_comm_info {
            struct_size,
            rank,
            size,
            place,
            transport,
            shares_address_space,
            shares_host_memory,
        },
        dao_comm_transport {
            struct_size,
            self_,
            rank,
            size,
            name,
            shares_host_memory,
            last_error,
            barrier,
            allgather,
            window_create,
            window_allocate,
            window_get,
            window_put,
            window_complete,
            window_free,
            shared_allocate,
            shared_query,
            shared_free,
            destroy,
            window_get_many,
            window_put_many,
            alltoall,
            alltoallv,
            exchange_limit,
        },
    )
}

#[test]
fn structs_match_the_headers() {
    let c_structs = header_structs(&headers());
    let rust_structs = rust_structs();
    let layouts = rust_layouts();
    // Same structs with the same fields in the same order, in the headers,
    // in lib.rs and in the list of this test.
    assert_eq!(
        c_structs.keys().collect::<Vec<_>>(),
        rust_structs.keys().collect::<Vec<_>>(),
        "structs of the headers and of dao-sys"
    );
    assert_eq!(c_structs, rust_structs, "fields of the structs");
    for (name, _, _, fields) in &layouts {
        let listed: Vec<String> = fields.iter().map(|f| c_field(f.0).to_string()).collect();
        assert_eq!(
            &listed, &rust_structs[*name],
            "fields of {name} in this test"
        );
    }
    assert_eq!(
        layouts.len(),
        rust_structs.len(),
        "every struct is in this test"
    );

    let mut src = String::from(
        "#include <dao.h>\n#include <stddef.h>\n#include <stdio.h>\n\nint main(void) {\n",
    );
    for (name, _, _, fields) in &layouts {
        src.push_str(&format!(
            "  {{ struct a {{ char c; {name} s; }}; printf(\"{name} %zu %zu\\n\", sizeof({name}), offsetof(struct a, s)); }}\n"
        ));
        for (field, _, _) in fields {
            let field = c_field(field);
            src.push_str(&format!(
                "  printf(\"{name}.{field} %zu %zu\\n\", offsetof({name}, {field}), sizeof((({name} *)0)->{field}));\n"
            ));
        }
    }
    src.push_str("  return 0;\n}\n");
    let out = compile("layout", &src, true);
    let c: BTreeMap<&str, (usize, usize)> = out
        .lines()
        .map(|l| {
            let mut it = l.split(' ');
            let key = it.next().unwrap();
            let a = it.next().unwrap().parse().unwrap();
            let b = it.next().unwrap().parse().unwrap();
            (key, (a, b))
        })
        .collect();
    for (name, size, align, fields) in &layouts {
        assert_eq!(c[*name], (*size, *align), "size and alignment of {name}");
        for (field, offset, fsize) in fields {
            let key = format!("{name}.{}", c_field(field));
            assert_eq!(
                c[key.as_str()],
                (*offset, *fsize),
                "offset and size of {key}"
            );
        }
    }
}

#[test]
fn the_library_links_and_answers() {
    // One call through the declarations: the linked library is the one of
    // these headers (same major version), and it answers.
    let number = unsafe { dao_version_number() };
    assert_eq!(
        number / 10000,
        DAO_VERSION_MAJOR,
        "library {number}, headers {DAO_VERSION_NUMBER}"
    );
    let text = unsafe { std::ffi::CStr::from_ptr(dao_status_string(DAO_ERR_NO_DEVICE)) };
    assert_eq!(text.to_str().unwrap(), "no such device");
}
