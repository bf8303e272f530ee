//! Finds libdao for linking, without any crate from a registry:
//!
//! 1. `DAO_LIB_DIR` (takes precedence): a directory that holds `libdao.so`
//!    (an install's `lib/` or a CMake build directory);
//! 2. else the `pkg-config` program: `pkg-config --libs-only-L --libs-only-l dao`
//!    (set `PKG_CONFIG_PATH` to an install's `lib/pkgconfig` if needed).
//!
//! It also looks for the headers, only for this crate's tests (they compile a
//! C program against `dao.h` to check the declarations): `DAO_INCLUDE_DIR`,
//! else `pkg-config --cflags-only-I dao`, else the `include/` directory of the
//! libdao source tree this crate sits in. The directory (or "") is passed to
//! the tests as `DAO_SYS_INCLUDE_DIR`, and to dependents' build scripts as
//! `DEP_DAO_INCLUDE` (`links = "dao"`).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn pkg_config(args: &[&str]) -> Result<String, String> {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let output = Command::new(&program)
        .args(args)
        .arg("dao")
        .output()
        .map_err(|e| format!("could not run `{program}`: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`{program} {} dao` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn has_library(dir: &Path) -> bool {
    // The shared library: the static one needs libdao's C++ runtime too.
    ["libdao.so", "libdao.dylib", "dao.lib"]
        .iter()
        .any(|name| dir.join(name).exists())
}

fn include_dir(lib_dir: Option<&Path>) -> Option<PathBuf> {
    if let Some(dir) = env::var_os("DAO_INCLUDE_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let with_header = |dir: PathBuf| dir.join("dao.h").exists().then_some(dir);
    // An install: <prefix>/lib -> <prefix>/include.
    if let Some(found) = lib_dir
        .and_then(Path::parent)
        .and_then(|prefix| with_header(prefix.join("include")))
    {
        return Some(found);
    }
    if lib_dir.is_none() {
        if let Ok(flags) = pkg_config(&["--cflags-only-I"]) {
            for flag in flags.split_whitespace() {
                if let Some(found) = flag.strip_prefix("-I").and_then(|d| with_header(d.into())) {
                    return Some(found);
                }
            }
        }
    }
    // This crate inside the libdao source tree: bindings/rust/dao-sys.
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR")?);
    with_header(manifest.join("../../../include"))
}

fn main() {
    for var in [
        "DAO_LIB_DIR",
        "DAO_INCLUDE_DIR",
        "PKG_CONFIG",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG_LIBDIR",
        "PKG_CONFIG_SYSROOT_DIR",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=build.rs");

    let lib_dir = match env::var_os("DAO_LIB_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if !has_library(&dir) {
                panic!(
                    "\n\ndao-sys: DAO_LIB_DIR is set to {} but there is no libdao \
                     (libdao.so) in it.\nPoint DAO_LIB_DIR at the directory that holds \
                     libdao.so (an install's lib/ or a CMake build directory of libdao), \
                     or unset it to use pkg-config.\n\n",
                    dir.display()
                );
            }
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib=dao");
            println!("cargo:lib_dir={}", dir.display());
            Some(dir)
        }
        None => {
            let libs = pkg_config(&["--libs-only-L", "--libs-only-l"]).unwrap_or_else(|why| {
                panic!(
                    "\n\ndao-sys: cannot find libdao.\n  {why}\nEither set DAO_LIB_DIR to the \
                     directory that holds libdao.so, or install libdao (its dao.pc) where \
                     pkg-config finds it, for example\n  PKG_CONFIG_PATH=/opt/dao/lib/pkgconfig \
                     cargo build\n\n"
                )
            });
            let mut first_dir = None;
            let mut linked = false;
            for flag in libs.split_whitespace() {
                if let Some(dir) = flag.strip_prefix("-L") {
                    println!("cargo:rustc-link-search=native={dir}");
                    first_dir.get_or_insert_with(|| PathBuf::from(dir));
                } else if let Some(lib) = flag.strip_prefix("-l") {
                    println!("cargo:rustc-link-lib={lib}");
                    linked |= lib == "dao";
                }
            }
            if !linked {
                panic!(
                    "\n\ndao-sys: `pkg-config --libs dao` did not name -ldao (it said \
                     `{}`); set DAO_LIB_DIR to the directory that holds libdao.so.\n\n",
                    libs.trim()
                );
            }
            if let Some(dir) = &first_dir {
                println!("cargo:lib_dir={}", dir.display());
            }
            first_dir
        }
    };

    let include = include_dir(lib_dir.as_deref());
    if let Some(dir) = &include {
        println!("cargo:include={}", dir.display());
    }
    println!(
        "cargo:rustc-env=DAO_SYS_INCLUDE_DIR={}",
        include
            .as_ref()
            .map(|d| d.display().to_string())
            .unwrap_or_default()
    );
}
