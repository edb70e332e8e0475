//! `./x`, the README's set-up script: bad use says how to call it and builds nothing, and
//! a machine without cargo on PATH is told where to get it instead of failing later.

use std::path::Path;
use std::process::Command;

fn x() -> Command {
    let mut c = Command::new("/bin/sh");
    c.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("x"));
    c
}

#[test]
fn an_unknown_command_prints_the_usage_and_exits_2() -> Result<(), Box<dyn std::error::Error>> {
    let out = x().arg("bild").output()?;
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr)?;
    assert!(err.contains("usage: ./x test"), "{err}");
    let out = x().output()?;
    assert_eq!(out.status.code(), Some(2));
    Ok(())
}

#[test]
fn without_cargo_it_names_the_toolchain_to_install() -> Result<(), Box<dyn std::error::Error>> {
    // A PATH with nothing on it: no cargo, no dpkg.
    let out = x().arg("setup").env("PATH", "/nonexistent").output()?;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr)?;
    assert!(err.contains("install the Rust toolchain"), "{err}");
    Ok(())
}
