//! Every file fact of a probe batch answered by one unit: one `stat` for
//! all the paths instead of one per path, the contents attached to the
//! framing's one `cat`, and each path's answer as [`FileFact`]'s own
//! script would have given it.

use super::files::MAX_CONTENT;
use crate::remote::probe::{Joint, ProbeResult};
use crate::remote::shell::quote;

/// How a file fact joins the others of its batch.
pub(crate) fn joint(path: &str) -> Joint {
    Joint {
        group: "file".into(),
        query: path.into(),
        script,
        split,
    }
}

/// Per path, in order, `@@F <rc> <kind>` and then the lines of its own
/// answer: `absent` (one line), `meta` (the state and link lines), `cat`
/// (the same, its content attached) or `sha` (the same and the
/// `sha256sum` line of a file too large to read). Only links and large
/// files cost a process beyond the `stat`.
fn script(paths: &[&str]) -> String {
    let list: Vec<String> = paths.iter().map(|p| quote(p)).collect();
    format!(
        r#"ts= ; set --
for p in {list}; do
  if [ -L "$p" ]; then t=l; elif [ -f "$p" ]; then t=f; elif [ -d "$p" ]; then t=d; elif [ -e "$p" ]; then t=o; else t=-; fi
  ts="$ts$t "
  [ "$t" = - ] || set -- "$@" "$p"
done
st=
if [ "$#" -gt 0 ]; then st=$(stat -c '%a %U %G %s' -- "$@") || exit; fi
st=$st$np_nl
for p in {list}; do
  t=${{ts%% *}} ts=${{ts#* }}
  if [ "$t" = - ]; then printf '@@F 0 absent\nabsent\n'; continue; fi
  l=${{st%%"$np_nl"*}} st=${{st#*"$np_nl"}}
  set -- $l; h="$t $1 $2 $3 $4"
  if [ "$t" = f ] && [ "$4" -le {MAX_CONTENT} ]; then
    if np_cat "$p"; then printf '@@F 0 cat\n%s\n\n' "$h"; else printf '@@F 1 meta\n%s\n\n' "$h"; fi
  elif [ "$t" = f ]; then printf '@@F 3 sha\n%s\n\n' "$h"; sha256sum -- "$p" || echo
  elif [ "$t" = l ]; then printf '@@F 0 meta\n%s\n' "$h"; readlink -- "$p" || echo
  else printf '@@F 0 meta\n%s\n\n' "$h"
  fi
done"#,
        list = list.join(" ")
    )
}

/// Each path's answer from the joint one; when that cannot be read (its
/// `stat` failed), each path gets it as it is, to fail alike.
fn split(paths: &[&str], r: &ProbeResult) -> Vec<ProbeResult> {
    split_answers(paths.len(), r).unwrap_or_else(|| vec![r.clone(); paths.len()])
}

fn split_answers(n: usize, r: &ProbeResult) -> Option<Vec<ProbeResult>> {
    if r.rc != 0 {
        return None;
    }
    let mut rest = r.stdout.as_str();
    let mut line = || {
        let (l, next) = rest.split_once('\n')?;
        rest = next;
        Some(l)
    };
    let mut answers = Vec::with_capacity(n);
    let mut attached = Vec::new();
    for i in 0..n {
        let status = line()?.strip_prefix("@@F ")?;
        let (rc, kind) = status.split_once(' ')?;
        let lines = match kind {
            "absent" => 1,
            "meta" | "cat" => 2,
            "sha" => 3,
            _ => return None,
        };
        let own: String = (0..lines)
            .map(|_| line().map(|l| format!("{l}\n")))
            .collect::<Option<_>>()?;
        if kind == "cat" {
            attached.push(i);
        }
        answers.push(ProbeResult {
            rc: rc.parse().ok()?,
            stdout: own,
            stderr: if rc == "0" {
                String::new()
            } else {
                r.stderr.clone()
            },
        });
    }
    if attached.is_empty() {
        return rest.is_empty().then_some(answers);
    }
    let sizes: Vec<usize> = line()?
        .split(' ')
        .map(|s| s.parse().ok())
        .collect::<Option<_>>()?;
    if sizes.len() != attached.len() {
        return None;
    }
    for (i, size) in attached.into_iter().zip(sizes) {
        let content = rest.get(..size)?;
        answers[i].stdout.push_str(&format!("{size}\n{content}"));
        rest = &rest[size..];
    }
    rest.is_empty().then_some(answers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::fact::Fact;
    use crate::modules::kit::files::FileFact;
    use crate::remote::joint::Batch;
    use crate::remote::local::LocalTransport;
    use crate::remote::probe::{build_script, parse_frames, Probe};
    use crate::remote::{Purpose, Script, Transport};
    use std::collections::BTreeMap;

    fn answers(probes: Vec<Probe>) -> (usize, BTreeMap<String, ProbeResult>) {
        let batch = Batch::new(probes, true);
        let ids: Vec<String> = batch.units.iter().map(|u| u.0.clone()).collect();
        let script = Script {
            purpose: Purpose::Probe,
            body: build_script("t", &batch.units, false, &[]),
            become_user: None,
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
        std::fs::write(at("large"), "x".repeat(MAX_CONTENT as usize + 1)).unwrap();
        std::os::unix::fs::symlink("a b'c", at("link")).unwrap();
        std::fs::create_dir(at("dir")).unwrap();
        let paths = ["a b'c", "missing", "empty", "nul", "large", "link", "dir"].map(at);
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
    }

    #[test]
    fn a_joint_answer_that_cannot_be_split_fails_every_path() {
        let failed = ProbeResult {
            rc: 1,
            stdout: String::new(),
            stderr: "stat: cannot stat\n".into(),
        };
        assert_eq!(split(&["/a", "/b"], &failed), [failed.clone(), failed]);
        let short = ProbeResult::ok("@@F 0 cat\nf 644 root root 1\n\n");
        assert_eq!(split(&["/a"], &short)[0], short);
    }
}
