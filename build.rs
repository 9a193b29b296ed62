//! Records the commit the binary is built from, for `nodeprov --version`:
//! a bug report then names the exact source. A tree without git (a crate
//! tarball, a source package) builds too, and says "unknown".

use std::path::PathBuf;
use std::process::Command;

fn main() {
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
