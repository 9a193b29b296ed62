//! Records the commit the binary is built from, for `nodeprov --version`:
//! a bug report then names the exact source. A tree without git (a crate
//! tarball, a source package) builds too, and says "unknown".
//!
//! Also gathers each module file's `//!` text, which `nodeprov doc` and
//! docs/modules/ show: a module's documentation lives beside its code,
//! written once.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    module_docs();
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=NODEPROV_COMMIT={commit}");
    println!("cargo:rerun-if-changed=build.rs");
    // HEAD names the branch, the branch's ref file the commit: a checkout
    // changes the first, a commit the second. Watching just these keeps
    // build.rs from running on every build. A worktree's HEAD is not under
    // ./.git, so git says where both live.
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    for file in ["HEAD", "packed-refs"].into_iter().chain(branch.as_deref()) {
        watch(file);
    }
}

fn watch(file: &str) {
    if let Some(path) = git(&["rev-parse", "--git-path", file]) {
        let path = PathBuf::from(path);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_string())
}

/// `$OUT_DIR/module_docs.rs`: every file under src/modules with its leading
/// `//!` lines, keyed by the path `file!()` gives inside it.
fn module_docs() {
    let mut files = Vec::new();
    rust_files(Path::new("src/modules"), &mut files);
    files.sort();
    let mut out = String::from("pub(crate) static MODULE_DOCS: &[(&str, &str)] = &[\n");
    for path in files {
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(&path).expect("a module file is readable");
        let doc: Vec<&str> = text
            .lines()
            .map_while(|l| l.strip_prefix("//!"))
            .map(|l| l.strip_prefix(' ').unwrap_or(l))
            .collect();
        if !doc.is_empty() {
            let _ = writeln!(
                out,
                "    ({:?}, {:?}),",
                path.display().to_string(),
                doc.join("\n")
            );
        }
    }
    out.push_str("];\n");
    println!("cargo:rerun-if-changed=src/modules");
    let dest = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(dest.join("module_docs.rs"), out).expect("OUT_DIR is writable");
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir)
        .expect("src/modules is readable")
        .flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
