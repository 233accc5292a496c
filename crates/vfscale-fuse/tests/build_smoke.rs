//! A real toolchain on the mount: a small Rust crate (two modules) and a C
//! file are written there, built there (objects and binaries on the mount)
//! and run from there.

mod common;

use common::*;
use std::fs;
use std::process::Command;

#[test]
fn rustc_builds_and_runs_a_program_on_the_mount() {
    let Some(m) = mount() else { return };
    let Ok(rustc) = which("rustc") else {
        eprintln!("SKIPPED: rustc not found");
        return;
    };
    let src = m.p("proj/src");
    fs::create_dir_all(&src).unwrap();
    fs::write(
        src.join("main.rs"),
        "mod util;\nfn main() { println!(\"sum={}\", util::sum(&[1, 2, 3, 4])); }\n",
    )
    .unwrap();
    fs::write(
        src.join("util.rs"),
        "pub fn sum(v: &[i32]) -> i32 { v.iter().sum() }\n",
    )
    .unwrap();
    let out_dir = m.p("proj/target");
    fs::create_dir(&out_dir).unwrap();
    let st = Command::new(rustc)
        .current_dir(m.p("proj"))
        .args([
            "--edition",
            "2021",
            "-C",
            "opt-level=0",
            "--out-dir",
            "target",
        ])
        .arg("src/main.rs")
        .status()
        .unwrap();
    assert!(st.success(), "rustc failed on the mount");
    let out = Command::new(out_dir.join("main")).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sum=10\n");
}

#[test]
fn cc_builds_and_runs_a_program_on_the_mount() {
    let Some(m) = mount() else { return };
    let Ok(cc) = which("cc") else {
        eprintln!("SKIPPED: cc not found");
        return;
    };
    fs::create_dir(m.p("c")).unwrap();
    fs::write(m.p("c/lib.h"), "int twice(int);\n").unwrap();
    fs::write(
        m.p("c/lib.c"),
        "#include \"lib.h\"\nint twice(int x) { return 2 * x; }\n",
    )
    .unwrap();
    fs::write(
        m.p("c/main.c"),
        "#include <stdio.h>\n#include \"lib.h\"\nint main(void) { printf(\"%d\\n\", twice(21)); return 0; }\n",
    )
    .unwrap();
    let st = Command::new(cc)
        .current_dir(m.p("c"))
        .args(["-O0", "-o", "prog", "main.c", "lib.c"])
        .status()
        .unwrap();
    assert!(st.success(), "cc failed on the mount");
    let out = Command::new(m.p("c/prog")).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "42\n");
}

fn which(tool: &str) -> Result<std::path::PathBuf, ()> {
    let home_cargo = std::env::var("CARGO_HOME")
        .map(|h| format!("{h}/bin"))
        .unwrap_or_default();
    let path = std::env::var("PATH").unwrap_or_default();
    for dir in path.split(':').chain([home_cargo.as_str()]) {
        let p = std::path::Path::new(dir).join(tool);
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(())
}
