//! Every file fact of a probe batch answered by one unit: one `stat` for
//! all the paths instead of one per path, the contents attached to the
//! framing's one `cat`, and each path's answer as the file fact's own
//! script would have given it. Content over `max` bytes is read as its
//! SHA-256, as the file fact does.

use crate::base::shell::quote;
use crate::remote::probe::{carried_len, ProbeResult};

/// Per path, in order, `@@F <rc> <kind>` and then the lines of its own
/// answer: `absent` (one line), `meta` (the state and link lines), `cat`
/// (the same, its content attached), `sha` (the same and the `sha256sum`
/// line of a file too large to read) or `link` (the state line, the link's
/// text and its resolved path). Only links and large files cost a process
/// beyond the `stat`.
pub(crate) fn script(paths: &[&str], max: u64) -> String {
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
  if [ "$t" = f ] && [ "$4" -le {max} ]; then
    if np_cat "$p"; then printf '@@F 0 cat\n%s\n\n' "$h"; else printf '@@F 1 meta\n%s\n\n' "$h"; fi
  elif [ "$t" = f ]; then printf '@@F 3 sha\n%s\n\n' "$h"; sha256sum -- "$p" || echo
  elif [ "$t" = l ]; then printf '@@F 0 link\n%s\n' "$h"; readlink -- "$p" || echo; readlink -m -- "$p" || echo
  else printf '@@F 0 meta\n%s\n\n' "$h"
  fi
done"#,
        list = list.join(" ")
    )
}

/// Each path's answer from the joint one; when that cannot be read (its
/// `stat` failed), each path gets it as it is, to fail alike.
pub(crate) fn split(paths: &[&str], r: &ProbeResult) -> Vec<ProbeResult> {
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
            "sha" | "link" => 3,
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
    let sizes: Vec<&str> = line()?.split(' ').collect();
    if sizes.len() != attached.len() {
        return None;
    }
    for (i, size) in attached.into_iter().zip(sizes) {
        let len = carried_len(size)?;
        let content = rest.get(..len)?;
        answers[i].stdout.push_str(&format!("{size}\n{content}"));
        rest = &rest[len..];
    }
    rest.is_empty().then_some(answers)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// A link's answer is three lines, its resolved path the third: the
    /// paths after it keep their own answers.
    #[test]
    fn a_link_among_other_paths_keeps_its_resolved_path() {
        let joint = ProbeResult::ok(
            "@@F 0 meta\nd 755 root root 4096\n\n\
             @@F 0 link\nl 777 root root 4\n../b\n/srv/b\n\
             @@F 0 absent\nabsent\n\
             @@F 0 cat\nf 644 root root 2\n\n\
             2\nx\n",
        );
        let paths = ["/srv/d", "/srv/d/l", "/srv/m", "/srv/f"];
        let own: Vec<String> = split(&paths, &joint)
            .into_iter()
            .map(|r| r.stdout)
            .collect();
        assert_eq!(
            own,
            [
                "d 755 root root 4096\n\n",
                "l 777 root root 4\n../b\n/srv/b\n",
                "absent\n",
                "f 644 root root 2\n\n2\nx\n",
            ]
        );
    }
}
