//! Every function that dao-sys declares has a safe wrapper: the safe crate
//! calls it, and the README's table names it.

use std::fs;
use std::path::Path;

fn declared() -> Vec<String> {
    let sys = include_str!("../../dao-sys/src/lib.rs");
    sys.split("pub fn ")
        .skip(1)
        .map(|rest| rest[..rest.find('(').unwrap()].to_string())
        .collect()
}

#[test]
fn the_safe_crate_calls_every_function() {
    let names = declared();
    assert_eq!(
        names.len(),
        129,
        "dao-sys declares the 129 functions of the headers"
    );
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let code: String = fs::read_dir(&src)
        .unwrap()
        .map(|e| fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    let missing: Vec<_> = names
        .iter()
        .filter(|n| !code.contains(&format!("ffi::{n}(")))
        .collect();
    assert!(missing.is_empty(), "no safe wrapper calls {missing:?}");
}

#[test]
fn the_readme_names_every_function() {
    let readme = include_str!("../../README.md");
    let missing: Vec<_> = declared()
        .into_iter()
        .filter(|n| !readme.contains(&format!("`{n}`")))
        .collect();
    assert!(missing.is_empty(), "README.md's table lacks {missing:?}");
}
