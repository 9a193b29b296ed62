//! Files on the host: the probe that reads one, its parsed state, and the
//! atomic write step every file-producing module uses.

use base64::Engine;

use super::account::valid_owner;
use super::fact::{self, Fact};
use super::files_joint;
use super::plan::{Change, ModuleError, Plan};
use crate::base::shell::quote;
use crate::modules::params::{choices, Mode, ParamError, Params};
use crate::remote::probe::{carry, uncarry, Carried, Joint, Probe, ProbeResult};

/// Content larger than this is compared by SHA-256 only, and not diffed.
pub(crate) const MAX_CONTENT: u64 = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Dir,
    Link,
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FileState {
    pub kind: Kind,
    pub mode: u32,
    pub owner: String,
    pub group: String,
    pub size: u64,
    pub link_target: Option<String>,
    /// A link's path with every link on the way resolved, as Ansible's
    /// `realpath` gives it (a dangling link as far as it resolves); `None`
    /// when `readlink -m` could not resolve it.
    pub link_resolved: Option<String>,
    /// `None` for non-files, for files too large to read and for files
    /// that are not UTF-8 text.
    pub content: Option<String>,
    /// The bytes of a file read that is not UTF-8 text: no text module may
    /// edit it, but `slurp` and `stat` see it as it is.
    pub binary: Option<Vec<u8>>,
    /// SHA-256 (hex) of a file too large to read.
    pub sha256: Option<String>,
}

impl FileState {
    /// Whether this is a regular file with exactly `content`.
    pub(crate) fn holds(&self, content: &str) -> bool {
        match (&self.content, &self.sha256) {
            (Some(have), _) => have == content,
            (None, Some(sum)) => *sum == sha256_hex(content.as_bytes()),
            (None, None) => false,
        }
    }

    /// The bytes of a file that was read, text or not.
    pub(crate) fn data(&self) -> Option<&[u8]> {
        match (&self.content, &self.binary) {
            (Some(text), _) => Some(text.as_bytes()),
            (None, bytes) => bytes.as_deref(),
        }
    }

    /// A path of this kind with these attributes, its content unread.
    pub(crate) fn of_kind(kind: Kind, mode: u32, owner: &str, group: &str) -> FileState {
        FileState {
            kind,
            mode,
            owner: owner.to_string(),
            group: group.to_string(),
            size: 0,
            link_target: None,
            link_resolved: None,
            content: None,
            binary: None,
            sha256: None,
        }
    }

    /// A regular file as a write would leave it.
    pub(crate) fn written(content: &str, mode: u32, owner: &str, group: &str) -> FileState {
        FileState {
            kind: Kind::File,
            mode,
            owner: owner.to_string(),
            group: group.to_string(),
            size: content.len() as u64,
            link_target: None,
            link_resolved: None,
            content: Some(content.to_string()),
            binary: None,
            sha256: None,
        }
    }
}

/// A path's type, mode, owner, size, link target and (small) content;
/// `None` when it does not exist. The content is attached to the answer
/// (`np_cat`), so the probe's one process of its own is its `stat`; only a
/// link costs two more, its text and its resolved path.
pub(crate) struct FileFact;

impl FileFact {
    /// The probe's body for the path in `$p`, for facts that learn the path
    /// on the host; it ends the script.
    pub(crate) fn state_script() -> String {
        format!(
            r#"if [ -L "$p" ]; then t=l; elif [ -f "$p" ]; then t=f; elif [ -d "$p" ]; then t=d; elif [ -e "$p" ]; then t=o; else echo absent; exit 0; fi
set -- $(stat -c '%a %U %G %s' -- "$p"); echo "$t $1 $2 $3 $4"
if [ "$t" = l ]; then readlink -- "$p" || echo; readlink -m -- "$p" || echo; else echo; fi
if [ "$t" = f ]; then if [ "$4" -le {MAX_CONTENT} ]; then np_cat "$p"; else sha256sum -- "$p"; exit 3; fi; fi"#
        )
    }
}

impl Fact for FileFact {
    type Query = str;
    type Value = Option<FileState>;

    fn key(path: &str) -> String {
        format!("file:{path}")
    }

    /// Every file fact of a batch joins one unit, with one `stat`.
    fn probe(path: &str) -> Probe {
        Probe::new(Self::key(path), Self::script(path)).with_joint(Joint {
            group: "file".into(),
            query: path.into(),
            script: |paths| files_joint::script(paths, MAX_CONTENT),
            split: files_joint::split,
        })
    }

    fn script(path: &str) -> String {
        format!("p={}\n{}", quote(path), FileFact::state_script())
    }

    fn parse(path: &str, r: &ProbeResult) -> Result<Option<FileState>, ModuleError> {
        let bad = |detail: &str| fact::bad(Self::key(path), format!("{detail}: {}", reason(r)));
        if r.rc != 0 && r.rc != 3 {
            return Err(bad("cannot read"));
        }
        let (header, rest) = r.stdout.split_once('\n').unwrap_or((&r.stdout, ""));
        if header == "absent" {
            return Ok(None);
        }
        let f: Vec<&str> = header.split(' ').collect();
        let [t, mode, owner, group, size] = f[..] else {
            return Err(bad("malformed file state"));
        };
        let kind = match t {
            "f" => Kind::File,
            "d" => Kind::Dir,
            "l" => Kind::Link,
            _ => Kind::Other,
        };
        let (link, content) = rest.split_once('\n').unwrap_or((rest, ""));
        let large = kind == Kind::File && r.rc == 3;
        let read = kind == Kind::File && r.rc == 0;
        // The framing's line of the attached file's size, before its bytes.
        let (content, binary) = match read {
            true => {
                let (size, text) = content.split_once('\n').unwrap_or(("0", ""));
                match uncarry(size, text).ok_or_else(|| bad("bad content"))? {
                    Carried::Text(text) => (text, None),
                    Carried::Bytes(bytes) => ("", Some(bytes)),
                }
            }
            false => (content, None),
        };
        Ok(Some(FileState {
            kind,
            mode: u32::from_str_radix(mode, 8).map_err(|_| bad("bad mode"))?,
            owner: owner.to_string(),
            group: group.to_string(),
            size: size.parse().map_err(|_| bad("bad size"))?,
            link_target: (kind == Kind::Link).then(|| link.to_string()),
            link_resolved: resolved(kind, content),
            content: (read && binary.is_none()).then(|| content.to_string()),
            binary,
            sha256: large.then(|| content.split(' ').next().unwrap_or_default().to_string()),
        }))
    }

    fn render(state: &Option<FileState>) -> ProbeResult {
        let Some(st) = state else {
            return ProbeResult::ok("absent\n");
        };
        let t = match st.kind {
            Kind::File => "f",
            Kind::Dir => "d",
            Kind::Link => "l",
            Kind::Other => "o",
        };
        let body = match (st.data(), &st.sha256) {
            (None, Some(sum)) => format!("{sum}  -\n"),
            (Some(data), _) if st.kind == Kind::File => {
                let (size, text) = carry(data);
                format!("{size}\n{text}")
            }
            _ if st.kind == Kind::Link => {
                format!("{}\n", st.link_resolved.as_deref().unwrap_or(""))
            }
            _ => String::new(),
        };
        ProbeResult {
            rc: if st.sha256.is_some() { 3 } else { 0 },
            ..ProbeResult::ok(format!(
                "{t} {:o} {} {} {}\n{}\n{body}",
                st.mode,
                st.owner,
                st.group,
                st.size,
                st.link_target.as_deref().unwrap_or(""),
            ))
        }
    }
}

/// A file as `follow: true` writes it: where `path` is a link, the file it
/// resolves to, found by the same probe (`readlink -m`) and named on the
/// answer's first line. Reading the target, not writing through the link:
/// the steps name the resolved path, which the write refuses to be a link.
pub(crate) struct FollowedFile;

impl Fact for FollowedFile {
    type Query = str;
    type Value = (String, Option<FileState>);

    fn key(path: &str) -> String {
        format!("file-followed:{path}")
    }

    fn script(path: &str) -> String {
        format!(
            "p={}\nif [ -L \"$p\" ]; then p=$(readlink -m -- \"$p\") || exit 1; fi\nprintf '%s\\n' \"$p\"\n{}",
            quote(path),
            FileFact::state_script()
        )
    }

    fn parse(path: &str, r: &ProbeResult) -> Result<Self::Value, ModuleError> {
        let Some((resolved, rest)) = r.stdout.split_once('\n') else {
            return Err(fact::bad(Self::key(path), "no resolved path"));
        };
        let rest = ProbeResult {
            stdout: rest.to_string(),
            ..r.clone()
        };
        Ok((resolved.to_string(), FileFact::parse(resolved, &rest)?))
    }

    fn render((resolved, state): &Self::Value) -> ProbeResult {
        let r = FileFact::render(state);
        ProbeResult {
            stdout: format!("{resolved}\n{}", r.stdout),
            ..r
        }
    }
}

/// A link's resolved path, the line after its text; an empty one is a
/// path `readlink -m` could not resolve.
fn resolved(kind: Kind, rest: &str) -> Option<String> {
    let line = rest.split('\n').next().filter(|l| !l.is_empty());
    line.filter(|_| kind == Kind::Link).map(String::from)
}

/// SHA-256 in hex, as `sha256sum` prints it.
pub(crate) fn sha256_hex(data: &[u8]) -> String {
    digest_hex(Digest::Sha256, data)
}

choices! {
    /// The digests Ansible's checksums use, by the names it gives them;
    /// `<name>sum` computes each on a host.
    pub(crate) enum Digest {
        Md5 = "md5",
        Sha1 = "sha1",
        Sha224 = "sha224",
        Sha256 = "sha256",
        Sha384 = "sha384",
        Sha512 = "sha512",
    }
}

/// A digest in hex, as `sha256sum`, `sha1sum` or `md5sum` prints it, from
/// the OpenSSL libssh2 links anyway.
pub(crate) fn digest_hex(digest: Digest, data: &[u8]) -> String {
    let mut md = [0u8; 64]; // EVP_MAX_MD_SIZE
    let mut len = 0u32;
    // SAFETY: a fresh digest context, freed before returning; `md` has room
    // for any digest and `data` is valid for its length.
    let ok = unsafe {
        let algorithm = match digest {
            Digest::Md5 => openssl_sys::EVP_md5(),
            Digest::Sha1 => openssl_sys::EVP_sha1(),
            Digest::Sha224 => openssl_sys::EVP_sha224(),
            Digest::Sha256 => openssl_sys::EVP_sha256(),
            Digest::Sha384 => openssl_sys::EVP_sha384(),
            Digest::Sha512 => openssl_sys::EVP_sha512(),
        };
        let ctx = openssl_sys::EVP_MD_CTX_new();
        let ok = !ctx.is_null()
            && openssl_sys::EVP_DigestInit_ex(ctx, algorithm, std::ptr::null_mut()) == 1
            && openssl_sys::EVP_DigestUpdate(ctx, data.as_ptr().cast(), data.len()) == 1
            && openssl_sys::EVP_DigestFinal_ex(ctx, md.as_mut_ptr(), &mut len) == 1;
        openssl_sys::EVP_MD_CTX_free(ctx);
        ok
    };
    assert!(ok, "OpenSSL could not compute a {digest:?} digest");
    md[..len as usize]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// How a file is to be written.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct WriteOpts {
    pub mode: Option<u32>,
    /// A symbolic mode, applied to the mode the path has (`mode` is unset).
    pub symbolic: Option<String>,
    pub owner: Option<String>,
    pub group: Option<String>,
    /// What a copy of the old file made before it is replaced adds to its
    /// path (`backup`), decided when the module is built.
    pub backup: Option<String>,
    /// A command that must accept the new content (`%s`: its temp file)
    /// before it replaces the old.
    pub validate: Option<String>,
}

impl WriteOpts {
    /// From the `mode`, `owner` and `group` parameters modules share.
    pub(crate) fn new(mode: Option<Mode>, owner: Option<String>, group: Option<String>) -> Self {
        let (mode, symbolic) = match mode {
            Some(Mode::Octal(m)) => (Some(m), None),
            Some(Mode::Symbolic(s)) => (None, Some(s)),
            None => (None, None),
        };
        WriteOpts {
            mode,
            symbolic,
            owner,
            group,
            backup: None,
            validate: None,
        }
    }

    /// [`WriteOpts::new`] for a task's parameters: `owner` and `group` must
    /// be names (or ids) chown takes as such, never one of its options.
    pub(crate) fn read(
        p: &Params,
        mode: Option<Mode>,
        owner: Option<String>,
        group: Option<String>,
    ) -> Result<Self, ParamError> {
        for (key, name) in [("owner", &owner), ("group", &group)] {
            if let Some(name) = name.as_deref().filter(|n| !valid_owner(n)) {
                return Err(p.error(key, format!("'{name}' is not a user or group name")));
            }
        }
        Ok(WriteOpts::new(mode, owner, group))
    }

    /// With Ansible's `validate`, which must name the file as `%s`.
    pub(crate) fn with_validate(self, validate: Option<String>) -> Result<Self, String> {
        match validate {
            Some(v) if !v.contains("%s") => Err(format!(
                "validate '{v}' must contain %s, where the new file's path goes"
            )),
            validate => Ok(WriteOpts { validate, ..self }),
        }
    }

    /// The mode a path whose mode is `current` must get, if one is asked.
    pub(crate) fn mode_for(&self, current: u32, is_dir: bool) -> Option<u32> {
        self.mode.or_else(|| {
            let symbolic = Mode::Symbolic(self.symbolic.clone()?);
            Some(symbolic.applied(current, is_dir))
        })
    }

    pub(crate) fn with_backup(self, backup: bool) -> Self {
        WriteOpts {
            backup: backup.then(backup_suffix),
            ..self
        }
    }
}

/// Ansible's name for a backup, after the path: `.<pid>.<time>~`, the
/// time the controller's local one. The number is random here rather than
/// a process's, so that no one can plant a file or a link at the name in
/// advance.
fn backup_suffix() -> String {
    let n = u64::from_str_radix(&crate::base::shell::random_hex()[..8], 16).unwrap_or(0);
    let now = std::time::SystemTime::now();
    let time = crate::base::time::strftime(now, "%Y-%m-%d@%H:%M:%S", false).unwrap_or_default();
    format!(".{}.{time}~", 1000 + n % 4_194_000)
}

/// A step that replaces `path` atomically: the new content goes to a temp
/// file in the same folder (created 0600, so never readable by others in
/// between), gets the old file's owner, mode and SELinux label unless told
/// otherwise, and is renamed over the old one. A failure at any point (a
/// full disk) leaves the old file untouched and removes the temp file.
pub(crate) fn write_step(path: &str, content: &str, opts: &WriteOpts) -> String {
    // The content goes straight into the step, one buffer however large the
    // file, as one quoted word the shell's own `printf` writes: no process,
    // and never in an argument list. Only a NUL, which no shell word holds,
    // needs base64 and its pipe.
    let mut s = String::with_capacity(content.len() / 3 * 4 + 1024);
    s.push_str(&temp_beside(path, opts));
    s.push_str("if ! printf '%s' ");
    if content.contains('\0') {
        s.push('\'');
        base64::engine::general_purpose::STANDARD.encode_string(content, &mut s);
        s.push_str("' | base64 -d");
    } else {
        crate::base::shell::quote_into(&mut s, content);
    }
    s.push_str(" > \"$t\"; then rm -f \"$t\"; echo \"cannot write $p\" >&2; exit 1; fi\n");
    s.push_str(&install_temp(opts));
    s
}

/// A step that makes each folder of `below` (folder names, in order) under
/// `root`, one at a time, and fails when `root` or a folder on the way is
/// a link, belongs to a user other than the one running it or root, or may
/// be written by others without the sticky bit: each of those lets
/// someone else redirect what is written below it, between this step and
/// the write or by a link planted in advance.
pub(crate) fn trusted_folders(root: &str, below: &[&str]) -> String {
    let mut s = String::from(
        "(\nnp_me=$(id -u)\n\
         np_trust() {\n\
         if [ -L \"$1\" ]; then echo \"$1 is a symbolic link: nodeprov writes through no link\" >&2; exit 1; fi\n\
         [ -d \"$1\" ] || { echo \"$1 is not a folder\" >&2; exit 1; }\n\
         np_st=$(stat -c '%u %a' -- \"$1\") || exit 1\n\
         np_uid=${np_st% *}; np_mode=${np_st#* }\n\
         if [ \"$np_uid\" != 0 ] && [ \"$np_uid\" != \"$np_me\" ]; then \
         echo \"$1 belongs to uid $np_uid, who could redirect what is written below it\" >&2; exit 1; fi\n\
         if [ $((0$np_mode & 022)) -ne 0 ] && [ $((0$np_mode & 01000)) -eq 0 ]; then \
         echo \"$1 may be written by other users, who could redirect what is written below it\" >&2; exit 1; fi\n\
         }\n",
    );
    let root = quote(root);
    s.push_str(&format!(
        "mkdir -p -- {root} || exit 1\nnp_trust {root}\nnp_d={root}\n"
    ));
    for folder in below {
        s.push_str(&format!(
            "np_d=\"$np_d\"/{}\n\
             if [ -e \"$np_d\" ] || [ -L \"$np_d\" ]; then np_trust \"$np_d\"; else mkdir -- \"$np_d\" || exit 1; fi\n",
            quote(folder)
        ));
    }
    s.push_str(") || exit 1");
    s
}

/// The start of an atomic write: `$p` is the path, `$t` a new empty temp
/// file in its folder, which must exist. No process: the name is the
/// unit's random `$np_r` (see `ScriptBuilder`) and a counter, and the file
/// is created by the shell with `noclobber` (never over a planted file)
/// and then checked to be a plain file and no link before anything is
/// written to it. It is created 0600, or, for a new path whose final mode
/// gives away nothing a temp file of ours should not, with that mode
/// (`$np_fresh` set), which spares the `chmod` of [`install_temp`].
pub(crate) fn temp_beside(path: &str, opts: &WriteOpts) -> String {
    let umask = match fresh_mode(opts) {
        Some(mode) => format!(
            "if [ -e \"$p\" ] || [ -L \"$p\" ]; then umask 077; np_fresh=; else umask {:03o}; np_fresh=1; fi\n",
            0o777 & !mode
        ),
        None => "umask 077; np_fresh=\n".to_string(),
    };
    format!(
        "p={}; case $p in */*) d=${{p%/*}}; d=${{d:-/}} ;; *) d=. ;; esac\n\
         [ -d \"$d\" ] || {{ echo \"directory $d does not exist\" >&2; exit 1; }}\n\
         np_k=$((${{np_k:-0}} + 1)); t=\"$d/.nodeprov.${{np_r:-}}$np_k\"\n\
         {umask}set -C\n\
         if ! true >\"$t\"; then np_c=1; elif [ -f \"$t\" ] && [ ! -L \"$t\" ]; then np_c=0; else np_c=2; fi\n\
         set +C; umask \"${{np_um:-022}}\"\n\
         case $np_c in 1) exit 1 ;; 2) echo \"$t is a link or no plain file: nothing is written through it\" >&2; exit 1 ;; esac\n",
        quote(path)
    )
}

/// The mode a new file's temp may be created with: the one it will end
/// with, when that mode can be made at creation (no execute or special
/// bits, writable by its owner) and the temp's owner and group are the
/// final ones. No mode asked means 0644, which hides nothing from anyone.
fn fresh_mode(opts: &WriteOpts) -> Option<u32> {
    match (opts.mode, &opts.symbolic) {
        (None, None) => Some(0o644),
        (Some(m), None)
            if m & !0o666 == 0
                && m & 0o600 == 0o600
                && opts.owner.is_none()
                && opts.group.is_none() =>
        {
            Some(m)
        }
        _ => None,
    }
}

/// The end of an atomic write: the temp file `$t`, already filled, takes
/// the old `$p`'s owner, mode and SELinux label (0644 for a new file),
/// then the attributes asked for, and is renamed over `$p`.
pub(crate) fn install_temp(opts: &WriteOpts) -> String {
    let mut s = String::new();
    if let Some(v) = &opts.validate {
        s.push_str(&format!(
            "( {} ) || {{ rm -f \"$t\"; echo {} >&2; exit 1; }}\n",
            v.replace("%s", "\"$t\""),
            quote(&format!("validate '{v}' refused the new content"))
        ));
    }
    // A label is copied only where SELinux is on: chcon is a process.
    let label = "[ ! -e /sys/fs/selinux/enforce ] || chcon --reference=\"$p\" \"$t\" 2>/dev/null";
    // A mode given in digits replaces whatever the temp file had first.
    s.push_str(&match opts.mode {
        Some(_) => format!(
            "if [ -e \"$p\" ]; then chown --reference=\"$p\" \"$t\" || {{ rm -f \"$t\"; exit 1; }}; {label}; fi\n"
        ),
        None => format!(
            "if [ -e \"$p\" ]; then chown --reference=\"$p\" \"$t\" && chmod --reference=\"$p\" \"$t\" || {{ rm -f \"$t\"; exit 1; }}; \
             {label}; elif [ -z \"$np_fresh\" ]; then chmod 644 \"$t\"; fi\n"
        ),
    });
    if let Some(suffix) = &opts.backup {
        // cp creates a new name exclusively and writes through no dangling
        // link; one already there is refused rather than written through.
        s.push_str(&format!(
            "if [ -e \"$p\" ]; then b=\"$p\"{}\n\
             if [ -e \"$b\" ] || [ -L \"$b\" ]; then rm -f \"$t\"; echo \"$b exists: no backup is written over it\" >&2; exit 1; fi\n\
             cp -p -- \"$p\" \"$b\" || {{ rm -f \"$t\"; exit 1; }}; fi\n",
            quote(suffix)
        ));
    }
    match (fresh_mode(opts), opts.mode) {
        (Some(_), Some(mode)) => {
            s.push_str(&format!(
                "[ -n \"$np_fresh\" ] || chmod {mode:o} \"$t\" || {{ rm -f \"$t\"; exit 1; }}\n"
            ));
            let rest = WriteOpts {
                mode: None,
                ..opts.clone()
            };
            s.push_str(&attr_commands("\"$t\"", &rest, "rm -f \"$t\"; exit 1"));
        }
        _ => s.push_str(&attr_commands("\"$t\"", opts, "rm -f \"$t\"; exit 1")),
    }
    s.push_str("mv -f -- \"$t\" \"$p\" || { rm -f \"$t\"; exit 1; }");
    s
}

/// chmod/chown for the attributes that were asked for; `on_fail` runs when one fails.
pub(crate) fn attr_commands(target: &str, opts: &WriteOpts, on_fail: &str) -> String {
    let mut s = String::new();
    if let Some(mode) = opts.mode {
        s.push_str(&format!("chmod {mode:o} {target} || {{ {on_fail}; }}\n"));
    } else if let Some(symbolic) = &opts.symbolic {
        // chmod without who would mask with the umask; Ansible's does not.
        let all = symbolic
            .split(',')
            .map(|c| match c.starts_with(['+', '-', '=']) {
                true => format!("a{c}"),
                false => c.to_string(),
            })
            .collect::<Vec<_>>()
            .join(",");
        s.push_str(&format!(
            "chmod {} {target} || {{ {on_fail}; }}\n",
            quote(&all)
        ));
    }
    let owner = match (&opts.owner, &opts.group) {
        (Some(o), Some(g)) => Some(format!("{o}:{g}")),
        (Some(o), None) => Some(o.clone()),
        (None, Some(g)) => Some(format!(":{g}")),
        (None, None) => None,
    };
    if let Some(owner) = owner {
        s.push_str(&format!(
            "chown -- {} {target} || {{ {on_fail}; }}\n",
            quote(&owner)
        ));
    }
    s
}

/// Unified diff of two texts, labelled with the path.
pub(crate) fn unified_diff(path: &str, before: &str, after: &str) -> String {
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("{path} (before)"), &format!("{path} (after)"))
        .to_string()
}

/// Why a probe failed: its stderr, or its exit status when it said nothing.
fn reason(r: &ProbeResult) -> String {
    match r.stderr.trim() {
        "" => format!("exit status {} with no error output", r.rc),
        said => said.to_string(),
    }
}

/// What a missing file means to a module that edits text in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WhenMissing {
    /// Start from an empty file.
    Create,
    /// Nothing to do (removing text from a file that is not there).
    Nothing,
    /// An error; the module has a `create` option that was not set.
    NeedsCreate,
    /// An error, in the words of Ansible's blockinfile and replace; the
    /// module cannot create the file, or was not asked to.
    Missing,
}

/// The text a module that edits a file starts from; `None` when the file
/// is missing and there is nothing to do.
pub(crate) fn text_to_edit(
    path: &str,
    current: Option<&FileState>,
    missing: WhenMissing,
) -> Result<Option<String>, ModuleError> {
    match (current, missing) {
        // Ansible's words (lineinfile, blockinfile, replace), which content asserts on.
        (Some(st), _) if st.kind == Kind::Dir => Err(ModuleError::Refused(format!(
            "Path {path} is a directory !"
        ))),
        (Some(st), _) => st.content.clone().map(Some).ok_or_else(|| {
            ModuleError::Refused(format!(
                "{path} is not a UTF-8 text file of at most {MAX_CONTENT} bytes"
            ))
        }),
        (None, WhenMissing::Create) => Ok(Some(String::new())),
        (None, WhenMissing::Nothing) => Ok(None),
        (None, WhenMissing::NeedsCreate) => Err(ModuleError::Absent(format!(
            "{path} does not exist (set create: true to create it)"
        ))),
        (None, WhenMissing::Missing) => {
            Err(ModuleError::Absent(format!("Path {path} does not exist !")))
        }
    }
}

/// The plan for "this path holds exactly this content, with these attributes".
pub(crate) fn plan_content(
    dest: &str,
    current: Option<&FileState>,
    content: &str,
    opts: &WriteOpts,
    force: bool,
) -> Result<Plan, ModuleError> {
    let mut plan = Plan::noop();
    match current {
        Some(st) if st.kind == Kind::Dir => {
            return Err(ModuleError::Refused(format!("{dest} is a directory")))
        }
        Some(_) if !force => return Ok(plan),
        _ => {}
    }
    if !current.is_some_and(|st| st.holds(content)) {
        let was = if current.is_some() {
            "old content"
        } else {
            "absent"
        };
        let mut change = Change::new(dest, Some(was.into()), Some("new content".into()));
        change.diff = content_diff(dest, current, content);
        if let Some(before) = current.map_or(Some(""), |st| st.content.as_deref()) {
            plan.diff = Some(serde_json::json!({
                "before": before, "after": content, "before_header": dest, "after_header": dest,
            }));
        }
        plan.changes.push(change);
        plan.steps.push(write_step(dest, content, opts));
        if let (Some(suffix), Some(_)) = (&opts.backup, current) {
            let backup = format!("{dest}{suffix}");
            plan.returns.insert("backup_file".into(), backup.into());
        }
    } else {
        let st = current.expect("content matched, so the file exists");
        let attr = attr_changes(dest, st, opts);
        if !attr.is_empty() {
            plan.steps.push(attr_commands(&quote(dest), opts, "exit 1"));
            plan.changes.extend(attr);
        }
    }
    if !plan.changes.is_empty() {
        let after = written_state(current, content, opts);
        plan.effects.push(FileFact::predict(dest, &Some(after)));
    }
    Ok(plan)
}

/// The file `plan_content` leaves: `content`, with the attributes asked or
/// kept, a new file's 0644 and root's otherwise.
pub(crate) fn written_state(
    current: Option<&FileState>,
    content: &str,
    opts: &WriteOpts,
) -> FileState {
    let base = current.map_or(0o644, |s| s.mode);
    let mode = opts.mode_for(base, false).unwrap_or(base);
    let kept = |asked: &Option<String>, had: fn(&FileState) -> &String| {
        (asked.clone())
            .or(current.map(|s| had(s).clone()))
            .unwrap_or_else(|| "root".into())
    };
    let owner = kept(&opts.owner, |s| &s.owner);
    let group = kept(&opts.group, |s| &s.group);
    FileState::written(content, mode, &owner, &group)
}

/// What Ansible's modules add to a result that names a `dest` or `path`
/// (`AnsibleModule.add_path_info`): the path's `state`, and when it exists
/// its `mode`, `owner`, `group` and `size`.
pub(crate) fn path_info(st: Option<&FileState>) -> serde_json::Map<String, serde_json::Value> {
    let Some(st) = st else {
        return serde_json::Map::from_iter([("state".into(), "absent".into())]);
    };
    let state = match st.kind {
        Kind::Dir => "directory",
        Kind::Link => "link",
        Kind::File | Kind::Other => "file",
    };
    serde_json::Map::from_iter([
        ("state".into(), state.into()),
        ("mode".into(), format!("{:04o}", st.mode).into()),
        ("owner".into(), st.owner.clone().into()),
        ("group".into(), st.group.clone().into()),
        ("size".into(), st.size.into()),
    ])
}

/// A unified diff when both sides are known and small enough to show: a
/// file over the content limit is compared by SHA-256 alone.
fn content_diff(dest: &str, current: Option<&FileState>, content: &str) -> Option<String> {
    let before = match current {
        Some(st) => st.content.as_deref()?,
        None => "",
    };
    (content.len() as u64 <= MAX_CONTENT).then(|| unified_diff(dest, before, content))
}

/// Mode/owner/group differences of an existing path.
pub(crate) fn attr_changes(dest: &str, st: &FileState, opts: &WriteOpts) -> Vec<Change> {
    let mut out = Vec::new();
    if let Some(mode) = opts
        .mode_for(st.mode, st.kind == Kind::Dir)
        .filter(|m| *m != st.mode)
    {
        out.push(Change::new(
            format!("{dest} mode"),
            Some(format!("{:04o}", st.mode)),
            Some(format!("{mode:04o}")),
        ));
    }
    if let Some(owner) = opts.owner.as_ref().filter(|o| **o != st.owner) {
        out.push(Change::new(
            format!("{dest} owner"),
            Some(st.owner.clone()),
            Some(owner.clone()),
        ));
    }
    if let Some(group) = opts.group.as_ref().filter(|g| **g != st.group) {
        out.push(Change::new(
            format!("{dest} group"),
            Some(st.group.clone()),
            Some(group.clone()),
        ));
    }
    out
}

/// The `msg` Ansible's text editors (lineinfile, blockinfile, replace)
/// return: what the edit did to the content (`edit`, empty when nothing),
/// and then whether mode or ownership change too, as their
/// `check_file_attrs` words it. A new file's attributes change when they
/// differ from what the module creates it with (0644, root's).
pub(crate) fn edit_msg(
    dest: &str,
    current: Option<&FileState>,
    opts: &WriteOpts,
    edit: &str,
) -> String {
    let attrs = match current {
        Some(st) => !attr_changes(dest, st, opts).is_empty(),
        None => {
            let made = written_state(None, "", &WriteOpts::default());
            let asked = written_state(None, "", opts);
            (asked.mode, &asked.owner, &asked.group) != (made.mode, &made.owner, &made.group)
        }
    };
    match (edit, attrs) {
        (_, false) => edit.to_string(),
        ("", true) => "ownership, perms or SE linux context changed".into(),
        (_, true) => format!("{edit} and ownership, perms or SE linux context changed"),
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut super::fact::RoundTrip) {
    let small = FileState::written("a = 1\nb\n", 0o640, "root", "adm");
    let special = |kind, link: Option<(&str, Option<&str>)>| FileState {
        kind,
        mode: 0o777,
        owner: "root".into(),
        group: "root".into(),
        size: 7,
        link_target: link.map(|(text, _)| text.to_string()),
        link_resolved: link.and_then(|(_, resolved)| resolved.map(String::from)),
        content: None,
        binary: None,
        sha256: None,
    };
    let large = FileState {
        content: None,
        sha256: Some(sha256_hex(b"large")),
        size: MAX_CONTENT + 1,
        ..small.clone()
    };
    let binary = FileState {
        content: None,
        binary: Some((0..=255u8).collect()),
        size: 256,
        ..small.clone()
    };
    for v in [
        None,
        Some(binary),
        Some(small),
        Some(FileState::written("", 0o600, "nobody", "nogroup")),
        Some(large),
        Some(special(Kind::Dir, None)),
        Some(special(Kind::Link, Some(("../x y", Some("/opt/x y"))))),
        Some(special(Kind::Link, Some(("loop", None)))),
        Some(special(Kind::Other, None)),
    ] {
        rt.check::<FileFact>("/etc/x", v.clone());
        rt.check::<FollowedFile>("/etc/x", ("/opt/x y".into(), v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_probe_always_says_why() {
        let silent = ProbeResult {
            rc: 2,
            stdout: String::new(),
            stderr: String::new(),
        };
        let err = FileFact::parse("/etc/x", &silent).unwrap_err().to_string();
        assert!(
            err.ends_with("cannot read: exit status 2 with no error output"),
            "{err}"
        );
        let said = ProbeResult {
            stderr: "stat: Permission denied\n".into(),
            ..silent
        };
        let err = FileFact::parse("/etc/x", &said).unwrap_err().to_string();
        assert!(
            err.ends_with("cannot read: stat: Permission denied"),
            "{err}"
        );
    }
    use crate::remote::joint::Batch;
    use crate::remote::probe::{build_script, parse_frames};
    use crate::remote::{local::LocalTransport, Purpose, Script, Transport};
    use std::collections::BTreeMap;

    fn run(body: String) -> crate::remote::Output {
        LocalTransport
            .run(&Script {
                purpose: Purpose::Mutate,
                body,
                become_user: None,
                become_flags: None,
            })
            .unwrap()
    }

    fn probe_local(path: &str) -> Option<FileState> {
        let p = FileFact::probe(path);
        let out = run(build_script("t", &[(p.key.clone(), p.script)], false, &[]));
        let res = parse_frames("t", &out.stdout, std::slice::from_ref(&p.key)).unwrap();
        FileFact::parse(path, &res[&p.key]).unwrap()
    }

    #[test]
    fn probe_reads_state_and_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a b'c");
        std::fs::write(&path, "x = 1\ny\n").unwrap();
        let p = path.to_str().unwrap();
        let st = probe_local(p).unwrap();
        assert_eq!(st.kind, Kind::File);
        assert_eq!(st.content.as_deref(), Some("x = 1\ny\n"));
        assert_eq!(st.size, 8);
        assert_eq!(probe_local(&format!("{p}.missing")), None);
        assert_eq!(
            FileFact::parse(p, &FileFact::render(&Some(st.clone()))).unwrap(),
            Some(st)
        );
    }

    fn answers(probes: Vec<Probe>) -> (usize, BTreeMap<String, ProbeResult>) {
        let batch = Batch::new(probes, true);
        let ids: Vec<String> = batch.units.iter().map(|u| u.0.clone()).collect();
        let script = Script {
            purpose: Purpose::Probe,
            body: build_script("t", &batch.units, false, &[]),
            become_user: None,
            become_flags: None,
        };
        let out = LocalTransport.run(&script).unwrap();
        let by_unit = parse_frames("t", &out.stdout, &ids).unwrap();
        (batch.units.len(), batch.answers(by_unit))
    }

    /// Every kind of path gets, from the one joint unit, the answer its own
    /// probe gives.
    #[test]
    fn joint_answers_are_the_answers_alone() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
        std::fs::write(at("a b'c"), "x = 1\ny\n").unwrap();
        std::fs::write(at("empty"), "").unwrap();
        std::fs::write(at("nul"), b"a\0\n\n").unwrap();
        std::fs::write(at("bin"), [b"\xff\n".as_slice(), b"x\xe9"].concat()).unwrap();
        std::fs::write(at("large"), "x".repeat(MAX_CONTENT as usize + 1)).unwrap();
        std::os::unix::fs::symlink("a b'c", at("link")).unwrap();
        std::fs::create_dir(at("dir")).unwrap();
        std::fs::create_dir(at("dir/inner")).unwrap();
        std::os::unix::fs::symlink("dir/inner", at("dir link")).unwrap();
        std::os::unix::fs::symlink("dir link/../../nul", at("chain")).unwrap();
        let paths = [
            "a b'c", "missing", "empty", "nul", "bin", "large", "link", "dir", "chain",
        ]
        .map(at);
        let probes: Vec<Probe> = paths.iter().map(|p| FileFact::probe(p)).collect();
        let (units, together) = answers(probes.clone());
        assert_eq!(units, 1);
        for (path, p) in paths.iter().zip(probes) {
            let key = p.key.clone();
            let (_, alone) = answers(vec![p]);
            assert_eq!(together[&key], alone[&key], "{path}");
            assert!(FileFact::parse(path, &together[&key]).is_ok(), "{path}");
        }
        let read = FileFact::parse(&paths[3], &together[&FileFact::key(&paths[3])]).unwrap();
        assert_eq!(read.unwrap().content.as_deref(), Some("a\0\n\n"));
        let read = FileFact::parse(&paths[4], &together[&FileFact::key(&paths[4])]).unwrap();
        let read = read.unwrap();
        assert_eq!((read.content, read.size), (None, 4));
        assert_eq!(read.binary.as_deref(), Some(b"\xff\nx\xe9".as_slice()));
        let chain = FileFact::parse(&paths[8], &together[&FileFact::key(&paths[8])]).unwrap();
        let real = dir.path().canonicalize().unwrap().join("nul");
        assert_eq!(
            chain.unwrap().link_resolved.as_deref(),
            real.to_str(),
            "the link's `..` is taken after its link is followed"
        );
    }

    /// A link carries its text as written and, on the next line, its path
    /// with every link on the way resolved, dangling or looping alike.
    #[test]
    fn a_link_reads_its_text_and_its_resolved_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let at = |name: &str| root.join(name).to_str().unwrap().to_string();
        std::fs::create_dir(at("real")).unwrap();
        std::fs::write(at("real/conf"), "x\n").unwrap();
        std::os::unix::fs::symlink("real", at("alias")).unwrap();
        std::os::unix::fs::symlink("alias/conf", at("link")).unwrap();
        std::os::unix::fs::symlink("missing/x", at("gone")).unwrap();
        std::os::unix::fs::symlink("loop", at("loop")).unwrap();
        for (name, text, resolved) in [
            ("link", "alias/conf", at("real/conf")),
            ("gone", "missing/x", at("missing/x")),
            ("loop", "loop", at("loop")),
        ] {
            let st = probe_local(&at(name)).unwrap();
            assert_eq!(st.kind, Kind::Link, "{name}");
            assert_eq!(st.link_target.as_deref(), Some(text), "{name}");
            assert_eq!(st.link_resolved, Some(resolved), "{name}");
            let again = FileFact::parse(name, &FileFact::render(&Some(st.clone()))).unwrap();
            assert_eq!(again, Some(st), "{name}");
        }
        let real = probe_local(&at("real/conf")).unwrap();
        assert_eq!((real.link_target, real.link_resolved), (None, None));
    }

    #[test]
    fn a_link_renders_its_text_then_its_resolved_path() {
        let link = FileState {
            kind: Kind::Link,
            link_target: Some("../x y".into()),
            link_resolved: Some("/opt/x y".into()),
            content: None,
            ..FileState::written("1234567", 0o777, "root", "root")
        };
        let text = FileFact::render(&Some(link.clone()));
        assert_eq!(text.stdout, "l 777 root root 7\n../x y\n/opt/x y\n");
        assert_eq!(
            FileFact::parse("/etc/x", &text).unwrap(),
            Some(link.clone())
        );
        let unresolved = ProbeResult::ok("l 777 root root 7\n../x y\n\n");
        let read = FileFact::parse("/etc/x", &unresolved).unwrap().unwrap();
        assert_eq!(
            (read.link_target, read.link_resolved),
            (link.link_target, None)
        );
    }

    /// A file that is not UTF-8 text is never edited as if it were.
    #[test]
    fn text_modules_refuse_a_binary_file() {
        let st = FileState {
            content: None,
            binary: Some(b"\xff".to_vec()),
            ..FileState::written("", 0o644, "root", "root")
        };
        let err = text_to_edit("/etc/x", Some(&st), WhenMissing::Create).unwrap_err();
        assert!(err.to_string().contains("not a UTF-8 text file"), "{err}");
        assert!(!st.holds("\u{fffd}"));
    }

    /// Nor is a folder, said in the words of Ansible's text editors.
    #[test]
    fn text_modules_refuse_a_folder_as_ansible_words_it() {
        let dir = FileState {
            kind: Kind::Dir,
            content: None,
            ..FileState::written("", 0o755, "root", "root")
        };
        let err = text_to_edit("/etc/x", Some(&dir), WhenMissing::Create).unwrap_err();
        assert_eq!(err.to_string(), "Path /etc/x is a directory !");
        let err = text_to_edit("/etc/y", None, WhenMissing::Missing).unwrap_err();
        assert_eq!(err.to_string(), "Path /etc/y does not exist !");
    }

    #[test]
    fn sha256_matches_sha256sum() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn content_is_read_up_to_the_limit_and_compared_by_sha256_beyond_it() {
        let dir = tempfile::tempdir().unwrap();
        let limit = MAX_CONTENT as usize;
        for size in [0, limit - 1, limit, limit + 1] {
            let text = "x".repeat(size);
            let path = dir.path().join(format!("f{size}"));
            std::fs::write(&path, &text).unwrap();
            let st = probe_local(path.to_str().unwrap()).unwrap();
            assert_eq!(st.size, size as u64);
            assert_eq!(st.content.is_some(), size <= limit, "{size}");
            assert!(st.holds(&text), "{size}");
            assert!(!st.holds(&format!("{text}y")), "{size}");
            let again = FileFact::parse("f", &FileFact::render(&Some(st.clone()))).unwrap();
            assert_eq!(again, Some(st), "{size}");
        }
    }

    #[test]
    fn validate_runs_on_the_temp_file_before_it_is_installed() {
        let opts = WriteOpts::default()
            .with_validate(Some("visudo -cf %s".into()))
            .unwrap();
        let step = write_step("/etc/sudoers.d/gpu", "x\n", &opts);
        let check = step.find("( visudo -cf \"$t\" ) || { rm -f \"$t\"; echo 'validate '\\''visudo -cf %s'\\'' refused the new content' >&2; exit 1; }");
        let install = step.find("mv -f -- \"$t\" \"$p\"");
        assert!(check.is_some() && check < install, "{step}");
        let err = WriteOpts::default().with_validate(Some("visudo -c".into()));
        assert!(err.unwrap_err().contains("must contain %s"));
    }

    #[test]
    fn write_step_is_atomic_keeps_mode_and_backs_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conf");
        std::fs::write(&path, "old\n").unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o640))
            .unwrap();
        let p = path.to_str().unwrap();
        let opts = WriteOpts::default().with_backup(true);
        let out = run(write_step(p, "new $(reboot) 'q'\n", &opts));
        assert_eq!(out.status, 0, "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "new $(reboot) 'q'\n"
        );
        let st = probe_local(p).unwrap();
        assert_eq!(st.mode, 0o640);
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let backup = names
            .iter()
            .find(|n| n.ends_with('~'))
            .expect("backup kept");
        let suffix = opts.backup.as_deref().unwrap();
        assert_eq!(*backup, format!("conf{suffix}"));
        // Ansible's shape: `.<number>.<YYYY-MM-DD@HH:MM:SS>~`.
        let shape = regex::Regex::new(r"^\.\d+\.\d{4}-\d\d-\d\d@\d\d:\d\d:\d\d~$").unwrap();
        assert!(shape.is_match(suffix), "{suffix}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join(backup)).unwrap(),
            "old\n"
        );
        assert_eq!(names.len(), 2, "no temp file left: {names:?}");
    }

    #[test]
    fn any_content_is_written_exactly_and_a_given_mode_from_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conf");
        let p = path.to_str().unwrap();
        let opts = WriteOpts {
            mode: Some(0o600),
            ..WriteOpts::default()
        };
        for content in [
            "a\0b\n",
            "back\\slash %s %% -n\n\n\n",
            "'",
            "",
            "\u{e9}\r\t",
        ] {
            let out = run(write_step(p, content, &opts));
            assert_eq!(out.status, 0, "{}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(
                std::fs::read(&path).unwrap(),
                content.as_bytes(),
                "{content:?}"
            );
            assert_eq!(probe_local(p).unwrap().mode, 0o600);
        }
        // Only content a shell word cannot hold goes through base64.
        assert!(write_step(p, "a\0b", &opts).contains("base64 -d"));
        assert!(!write_step(p, "plain", &opts).contains("base64"));
    }

    #[test]
    fn a_temp_file_is_never_made_over_a_planted_file_or_link() {
        // Even a unit secret someone learned only makes the write fail.
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "kept\n").unwrap();
        let dest = dir.path().join("conf");
        let p = dest.to_str().unwrap();
        let planted = dir.path().join(".nodeprov.known1");
        let plant: [&dyn Fn(); 3] = [
            &|| std::os::unix::fs::symlink(&victim, &planted).unwrap(),
            &|| std::os::unix::fs::symlink(outside.path().join("new"), &planted).unwrap(),
            &|| std::fs::write(&planted, "theirs\n").unwrap(),
        ];
        for plant in plant {
            let _ = std::fs::remove_file(&planted);
            plant();
            let step = write_step(p, "secret\n", &WriteOpts::default());
            let out = run(format!("np_r=known\n{step}"));
            // The shell says why it could not create it ("File exists").
            assert_ne!(out.status, 0);
            assert!(!out.stderr.is_empty());
            assert!(!dest.exists());
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "kept\n");
        assert!(!outside.path().join("new").exists());
        assert_eq!(std::fs::read_to_string(&planted).unwrap(), "theirs\n");
    }

    #[test]
    fn a_new_file_is_made_with_its_mode_and_the_shell_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conf");
        let p = path.to_str().unwrap();
        let opts = WriteOpts {
            mode: Some(0o640),
            ..WriteOpts::default()
        };
        let step = write_step(p, "a\n", &opts);
        let after = dir.path().join("after");
        let out = run(format!(
            "umask 022; np_um=0022\n{step}\necho b >{p} && : >{}",
            quote(after.to_str().unwrap())
        ));
        assert_eq!(out.status, 0, "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(probe_local(p).unwrap().mode, 0o640);
        // noclobber is off again and the umask is the script's.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "b\n");
        assert_eq!(probe_local(after.to_str().unwrap()).unwrap().mode, 0o644);
        // Only a file already there, or a mode made only by chmod, takes one.
        assert!(step.contains("[ -n \"$np_fresh\" ] || chmod 640"));
        let exec = write_step(
            p,
            "a\n",
            &WriteOpts {
                mode: Some(0o750),
                ..opts
            },
        );
        assert!(exec.contains("umask 077; np_fresh=\n") && exec.contains("\nchmod 750"));
    }

    #[test]
    fn write_into_missing_directory_fails_cleanly() {
        let out = run(write_step(
            "/nonexistent-dir-np/x",
            "a",
            &WriteOpts::default(),
        ));
        assert_ne!(out.status, 0);
        assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    }
}
