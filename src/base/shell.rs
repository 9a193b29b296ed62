//! POSIX shell quoting: every value that reaches a remote command passes
//! through [`quote`], so `$(reboot)` stays a string.

/// Quotes `s` as one shell word.
pub fn quote(s: &str) -> String {
    let mut out = String::new();
    quote_into(&mut out, s);
    out
}

/// Appends `s` quoted as one shell word, with no copy in between (a word
/// may hold a whole file).
pub fn quote_into(out: &mut String, s: &str) {
    if is_plain_word(s) {
        out.push_str(s);
        return;
    }
    out.reserve(s.len() + 2);
    out.push('\'');
    for (n, part) in s.split('\'').enumerate() {
        if n > 0 {
            out.push_str(r"'\''");
        }
        out.push_str(part);
    }
    out.push('\'');
}

/// Python's `shlex.quote`, for text Ansible quotes so (its `quote` filter,
/// an old-style module's arguments): as [`quote`], but a `'` inside is
/// written `'"'"'`.
pub fn shlex_quote(s: &str) -> String {
    match is_plain_word(s) {
        true => s.to_string(),
        false => format!("'{}'", s.replace('\'', r#"'"'"'"#)),
    }
}

/// A word the shell reads as it is: not empty, and only characters no
/// shell treats specially.
fn is_plain_word(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b))
}

/// A system binary by absolute path when `PATH` lacks the sbin folders
/// (`sudo` without `secure_path`, a plain user's login): `name` must be a
/// constant word, it is not quoted.
pub fn sbin(name: &str) -> String {
    format!(
        "\"$(command -v {name} 2>/dev/null || {{ [ -x /usr/sbin/{name} ] && echo /usr/sbin/{name}; }} || echo /sbin/{name})\""
    )
}

/// Splits a command line into words the way `sh` would for quoting purposes
/// (single and double quotes, backslash escapes; no expansion). A quote left
/// open runs to the end of the line.
pub fn split(line: &str) -> Vec<String> {
    scan(line).0
}

/// The first word of `line` as [`split`] reads it, and the text after it
/// as written (quotes and all).
pub fn first_word(line: &str) -> Option<(String, &str)> {
    let (words, _, end) = scan(line);
    let first = words.into_iter().next()?;
    Some((first, &line[end..]))
}

/// A quote that is never closed, at its 1-based character column.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("unclosed {quote} quote at column {col}")]
pub struct UnclosedQuote {
    pub quote: char,
    pub col: usize,
}

/// [`split`] for user input, where an open quote is a mistake to report.
pub fn split_strict(line: &str) -> Result<Vec<String>, UnclosedQuote> {
    match scan(line) {
        (words, None, _) => Ok(words),
        (_, Some(open), _) => Err(open),
    }
}

/// The words of `line`, an unclosed quote, and the byte offset where the
/// first word ends.
fn scan(line: &str) -> (Vec<String>, Option<UnclosedQuote>, usize) {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut open = None;
    let mut first_end = line.len();
    let mut chars = line.char_indices().enumerate();
    while let Some((i, (at, c))) = chars.next() {
        match c {
            '\'' | '"' => {
                in_word = true;
                open = Some(UnclosedQuote {
                    quote: c,
                    col: i + 1,
                });
                while let Some((_, (_, q))) = chars.next() {
                    match q {
                        q if q == c => {
                            open = None;
                            break;
                        }
                        // As shlex in POSIX mode: inside double quotes a
                        // backslash escapes only `"` and itself.
                        '\\' if c == '"' => match chars.next().map(|(_, (_, n))| n) {
                            Some(n @ ('"' | '\\')) => cur.push(n),
                            Some(n) => {
                                cur.push('\\');
                                cur.push(n);
                            }
                            None => cur.push('\\'),
                        },
                        q => cur.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.extend(chars.next().map(|(_, (_, n))| n));
            }
            c if c.is_whitespace() => {
                if in_word {
                    if words.is_empty() {
                        first_end = at;
                    }
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    (words, open, first_end)
}

/// Decodes `\NNN` octal escapes, as fstab(5) and the kernel write them in
/// /proc/mounts, /proc/swaps and /proc/self/mountinfo.
pub(crate) fn unescape_octal(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let code = b
            .get(i + 1..i + 4)
            .filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok());
        match code {
            Some(c) => {
                out.push(c);
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `command` fed `body` on its standard input by a here-document, under a
/// delimiter that no line of `body` equals: the body is on no command line
/// (`ps` shows none of it) and not bounded by the size of an argument.
/// Ends its line.
pub fn here_document(command: &str, body: &str) -> String {
    let end = (0..)
        .map(|n| format!("NP_EOF_{n}"))
        .find(|end| !body.lines().any(|l| l == end))
        .expect("a body has fewer lines than there are delimiters");
    format!("{command} <<'{end}'\n{body}\n{end}\n")
}

/// Starts `/bin/sh` as the user `$np_as` from a shell running as root,
/// reading its script from stdin (never from its arguments) and writing
/// into `$np_uo` and `$np_ue`: files of its own rather than descriptors of
/// root's staging folder, which a process it leaves behind could otherwise
/// read or write into later. It starts from a clean environment (root's
/// variables, `SUDO_*` among them, stay behind).
const DROP: &str = "runuser -u \"$np_as\" -- env -i PATH=\"$PATH\" LC_ALL=C \
    USER=\"$np_as\" LOGNAME=\"$np_as\" HOME=\"$(getent passwd \"$np_as\" | cut -d: -f6)\" \
    /bin/sh -s >\"$np_uo\" 2>\"$np_ue\"";

/// Descriptors the dropped shell does not inherit.
const CLOSED: &str = "4>&- 5>&- 6>&- 7>&- 8>&- 9>&-";

/// The dropped shell's script: from the user's home, the whole block
/// parsed before it runs, then run on /dev/null (its stdin is the script).
fn dropped_body(preamble: &str, script: &str) -> String {
    format!("cd \"$HOME\" 2>/dev/null || cd /\n{preamble}{{\n{script}\n}} </dev/null")
}

/// `script` run by `/bin/sh` as the user the shell word `who` names, from
/// a shell running as root (see [`DROP`]), with its output and status.
pub fn as_user(who: &str, script: &str) -> String {
    format!(
        "np_as={who}; np_uo=$(mktemp) && np_ue=$(mktemp) || exit 1\n{}\
         np_rc=$?; cat \"$np_uo\"; cat \"$np_ue\" >&2; rm -f \"$np_uo\" \"$np_ue\"; (exit $np_rc)",
        here_document(&format!("{DROP} 3>&- {CLOSED}"), &dropped_body("", script))
    )
}

/// A probe unit's body run as the user `who` names, so that it sees what
/// that user may see. Its `np_cat` only names the files it may read; each
/// is then read again as the user (a link swapped in meanwhile is read with
/// the user's rights, not root's) into a file of root's staging folder,
/// which the script's own `np_cat` attaches.
pub fn as_user_probe(who: &str, body: &str) -> String {
    // A staging folder of the user's own, for probes that keep a file
    // between their commands.
    let names_files = r#"np_t=$(mktemp -d) || exit 90
trap 'rm -rf "$np_t"' EXIT
np_nl='
'
np_cat() {
  np_r=0
  for np_f do
    case $np_f in /*) ;; *) np_f=$PWD/$np_f ;; esac
    case $np_f in *"$np_nl"*) np_r=1; continue ;; esac
    if true <"$np_f"; then printf '%s\n' "$np_f" >&3; else np_r=1; fi
  done
  return $np_r
}
"#;
    format!(
        "np_as={who}; np_uo=$(mktemp) && np_ue=$(mktemp) && np_ul=$(mktemp) || exit 1\n{}\
         np_rc=$?; cat \"$np_uo\"; cat \"$np_ue\" >&2; np_j=0\n\
         while IFS= read -r np_f; do\n  \
           np_j=$((np_j + 1)); np_k=$np_t/u$np_i.$np_j\n  \
           if runuser -u \"$np_as\" -- cat -- \"$np_f\" >\"$np_k\" 2>/dev/null; \
           then np_cat \"$np_k\"; else np_rc=1; fi\n\
         done <\"$np_ul\"\n\
         rm -f \"$np_uo\" \"$np_ue\" \"$np_ul\"; (exit $np_rc)",
        here_document(
            &format!("{DROP} 3>\"$np_ul\" {CLOSED}"),
            &dropped_body(names_files, body)
        )
    )
}

/// Ends the here-document of [`secret_stdin`]; a line of the text never
/// equals it, since callers escape line breaks inside their values.
const SECRET_END: &str = "NODEPROV_SECRET";

/// `command` fed `text` on its standard input by a here-document: the text
/// is on no command line (`ps` shows none of it), and [`mask_secrets`]
/// takes it out of any script a report shows. Must end its line.
pub fn secret_stdin(command: &str, text: &str) -> String {
    format!("{command} <<'{SECRET_END}'\n{text}\n{SECRET_END}\n")
}

/// `script` with the text of each [`secret_stdin`] replaced by `(hidden)`.
pub fn mask_secrets(script: &str) -> String {
    let open = format!("<<'{SECRET_END}'\n");
    let close = format!("\n{SECRET_END}\n");
    let mut out = String::with_capacity(script.len());
    let mut rest = script;
    while let Some(start) = rest.find(&open) {
        let body = start + open.len();
        let Some(len) = rest[body..].find(&close) else {
            break;
        };
        out.push_str(&rest[..body]);
        out.push_str("(hidden)");
        rest = &rest[body + len..];
    }
    out.push_str(rest);
    out
}

/// Tells secret texts apart within one run without showing them, where a
/// report needs a name for one (a probe key): a keyed hash whose key is
/// new each run, so it cannot be matched against guesses made elsewhere.
pub fn keyed_digest(text: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    static KEY: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    let mut h = KEY.get_or_init(Default::default).build_hasher();
    h.write(text.as_bytes());
    format!("{:016x}", h.finish())
}

/// Sets `$np_h` to the user's home as the password database has it: a
/// shell dropped to another user by sudo may still carry the caller's
/// `$HOME`.
pub const USER_HOME: &str =
    "np_h=$(getent passwd \"$(id -u)\" | cut -d: -f6); [ -n \"$np_h\" ] || np_h=$HOME\n";

/// Script lines that set `$var` to the folder `under_home` of the user's
/// home, made private (mode 0700) and refused, with each folder above it up
/// to the home, when it is a link or another user's: what the user's own
/// files of nodeprov and Ansible are written into.
pub fn private_folder(var: &str, under_home: &str) -> String {
    let mut path = String::new();
    let mut checked = String::new();
    for part in under_home.split('/') {
        path = if path.is_empty() {
            part.to_string()
        } else {
            format!("{path}/{part}")
        };
        checked.push_str(&format!(" \"$np_h\"/{}", quote(&path)));
    }
    format!(
        "{USER_HOME}{var}=\"$np_h\"/{}; (umask 077; mkdir -p \"${var}\") || exit 1\n\
         for np_x in{checked}; do if [ -L \"$np_x\" ] || [ ! -O \"$np_x\" ]; then echo \"$np_x is a link or not the user's own\" >&2; exit 1; fi; done\n\
         chmod 700 \"${var}\" || exit 1\n",
        quote(under_home)
    )
}

/// 64 random bits, for markers a host's output must not be able to guess
/// (sudo's prompt, a script's frames): the std hasher's per-instance keys
/// come from the operating system's random source.
pub fn random_hex() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_stdin_runs_and_is_masked() {
        let script = secret_stdin("cat", "user = \"u:$(p)\"") + "echo done";
        let out = std::process::Command::new("sh")
            .args(["-c", &script])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "user = \"u:$(p)\"\ndone\n"
        );
        let masked = mask_secrets(&format!("{script}\n{script}"));
        assert!(!masked.contains("u:$(p)"), "{masked}");
        assert_eq!(masked.matches("(hidden)").count(), 2, "{masked}");
        assert_eq!(
            mask_secrets("cat <<'EOF'\nx\nEOF\n"),
            "cat <<'EOF'\nx\nEOF\n"
        );
    }

    fn sh(script: &str) -> std::process::Output {
        std::process::Command::new("sh")
            .args(["-c", script])
            .output()
            .unwrap()
    }

    #[test]
    fn random_markers_differ_every_time() {
        let a: std::collections::BTreeSet<String> = (0..100).map(|_| random_hex()).collect();
        assert_eq!(a.len(), 100);
        assert!(a
            .iter()
            .all(|m| m.len() == 16 && m.bytes().all(|b| b.is_ascii_hexdigit())));
    }

    #[test]
    fn a_here_document_never_ends_early_on_a_line_of_its_body() {
        let body = "NP_EOF_0\nNP_EOF_1\r\n$(echo no)";
        let script = here_document("cat", body) + "echo done";
        assert!(script.starts_with("cat <<'NP_EOF_2'\n"), "{script}");
        let nested = here_document("sh -s", &script);
        assert!(nested.starts_with("sh -s <<'NP_EOF_3'\n"), "{nested}");
        assert_eq!(
            String::from_utf8_lossy(&sh(&nested).stdout),
            format!("{body}\ndone\n")
        );
    }

    #[test]
    fn a_dropped_step_keeps_its_output_status_and_stdin_apart() {
        let script = as_user(
            "nobody",
            "echo out; echo err >&2; cat; echo \"$HOME $USER $(pwd)\"; exit 3",
        );
        let out = sh(&format!("{script}\necho after $?"));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "out\n/nonexistent nobody /\nafter 3\n"
        );
        assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
    }

    #[test]
    fn a_keyed_digest_is_stable_within_a_run_and_quotes_nothing() {
        let d = keyed_digest("token=s3cr3t");
        assert_eq!(d, keyed_digest("token=s3cr3t"));
        assert_ne!(d, keyed_digest("token=s3cr3u"));
        assert!(
            d.len() == 16 && d.bytes().all(|b| b.is_ascii_hexdigit()),
            "{d}"
        );
    }

    #[test]
    fn octal_escapes_decode_and_others_stay() {
        assert_eq!(unescape_octal("a\\134b\\9"), "a\\b\\9");
        assert_eq!(unescape_octal("/swap\\040file"), "/swap file");
    }

    #[test]
    fn hostile_values_stay_one_word() {
        assert_eq!(quote("$(reboot)"), "'$(reboot)'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote(""), "''");
        assert_eq!(
            quote("/etc/sysctl.d/90-gpu.conf"),
            "/etc/sysctl.d/90-gpu.conf"
        );
    }

    #[test]
    fn sbin_finds_binaries_outside_path() {
        let s = sbin("mkswap");
        assert!(s.starts_with("\"$(command -v mkswap"), "{s}");
        assert!(s.contains("/usr/sbin/mkswap") && s.contains("/sbin/mkswap"));
    }

    #[test]
    fn split_inverts_quote() {
        for s in ["$(reboot)", "it's", "a b", "", "x\"y", "back\\slash"] {
            assert_eq!(split(&quote(s)), vec![s.to_string()], "{s}");
        }
        assert_eq!(
            split("echo 'a b' c\\ d \"e f\""),
            ["echo", "a b", "c d", "e f"]
        );
        assert_eq!(
            split(r#"-c "msg='a \n'; \"q\" \\ \$x""#),
            ["-c", r#"msg='a \n'; "q" \ \$x"#],
            "inside double quotes only a quote and a backslash are escaped, as in shlex"
        );
    }

    const SEEDS: &[&str] = &[
        "src=motd.j2 dest=/etc/motd mode=0644",
        "name=\"two words\" path='/a b' x=a\\ b empty= \"q\\\"uote\"",
        "creates=/opt/x chdir=/tmp echo 'it''s' \"$HOME\"",
    ];

    proptest::proptest! {
        #![proptest_config(crate::load::fuzz::config())]

        /// Splitting never panics and never invents text: quotes and
        /// escapes are only ever taken away.
        #[test]
        fn split_returns_words_made_of_the_input(text in crate::load::fuzz::mutated(SEEDS)) {
            let words = split(&text);
            let total: usize = words.iter().map(String::len).sum();
            proptest::prop_assert!(total <= text.len());
            proptest::prop_assert!(words.iter().all(|w| w.chars().all(|c| text.contains(c))));
        }
    }

    #[test]
    fn open_quotes_are_reported_by_the_strict_split_only() {
        assert_eq!(split("a='x y"), ["a=x y"]);
        let open = split_strict("a=1 b='x y").unwrap_err();
        assert_eq!(
            open,
            UnclosedQuote {
                quote: '\'',
                col: 7
            }
        );
        assert_eq!(open.to_string(), "unclosed ' quote at column 7");
        assert_eq!(split_strict("a=\"x\\\" y").unwrap_err().col, 3);
        assert_eq!(split_strict("a='x' b=\"y z\"").unwrap(), ["a=x", "b=y z"]);
    }
}
