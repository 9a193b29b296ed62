//! Ansible's path tests (`is file`, `is directory`, `is exists`, `is link`,
//! `is abs`, `is mount`, `is same_file`): templates render on the
//! controller, so these look at the controller's filesystem, as they do in
//! Ansible; a relative path is relative to where nodeprov runs.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use minijinja::{Environment, Error, ErrorKind, Value};

pub(super) fn register(env: &mut Environment<'static>) {
    for (names, test) in [
        (&["file", "is_file"][..], is_file as fn(&Path) -> bool),
        (&["directory", "is_dir"], is_dir),
        (&["link", "is_link"], is_link),
        (&["exists"], exists),
        (&["link_exists"], link_exists),
        (&["abs", "is_abs"], is_abs),
        (&["mount", "is_mount"], is_mount),
    ] {
        for name in names {
            env.add_test(*name, move |v: &Value| path(v).map(|p| test(Path::new(&p))));
        }
    }
    env.add_test("same_file", same_file);
    env.add_test("is_same_file", same_file);
}

/// Python's `os.path` functions take text (or bytes) only.
fn path(v: &Value) -> Result<String, Error> {
    if v.is_undefined() {
        return Err(Error::from(ErrorKind::UndefinedError));
    }
    v.as_str().map(str::to_string).ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("a path test needs a path, not {}", v.kind()),
        )
    })
}

fn is_file(p: &Path) -> bool {
    p.is_file()
}

fn is_dir(p: &Path) -> bool {
    p.is_dir()
}

fn is_link(p: &Path) -> bool {
    p.is_symlink()
}

fn exists(p: &Path) -> bool {
    p.exists()
}

fn link_exists(p: &Path) -> bool {
    p.symlink_metadata().is_ok()
}

fn is_abs(p: &Path) -> bool {
    p.is_absolute()
}

/// Python's `os.path.ismount`: not a link, and on another device than its
/// parent or the parent itself (the root).
fn is_mount(p: &Path) -> bool {
    let Ok(own) = p.symlink_metadata() else {
        return false;
    };
    if own.file_type().is_symlink() {
        return false;
    }
    let Ok(parent) = p.join("..").symlink_metadata() else {
        return false;
    };
    own.dev() != parent.dev() || own.ino() == parent.ino()
}

/// Python's `os.path.samefile`: both exist and are the same file, links
/// followed; a missing one is an error, as there.
fn same_file(a: &Value, b: &Value) -> Result<bool, Error> {
    let stat = |v: &Value| -> Result<Metadata, Error> {
        let p = path(v)?;
        std::fs::metadata(&p)
            .map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("same_file: {p}: {e}")))
    };
    let (a, b) = (stat(a)?, stat(b)?);
    Ok(a.dev() == b.dev() && a.ino() == b.ino())
}
