//! One ufw rule in the form `ufw show added` prints it. ufw stores rules
//! normalised (addresses as networks, `/32` dropped, the short syntax where
//! it fits) and prints each with `UFWCommandRule.get_command`; a task's rule
//! written the same way is the line to look for, so presence is decided
//! without running ufw. The same words, shell-quoted, are the command that
//! adds or deletes it: ufw prints lines it accepts back as commands.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::base::shell::quote;
use crate::modules::params::{choices, Choice};

choices! {
    pub(crate) enum Action {
        Allow = "allow",
        Deny = "deny",
        Limit = "limit",
        Reject = "reject",
    }
}

choices! {
    pub(crate) enum Proto {
        Any = "any",
        Tcp = "tcp",
        Udp = "udp",
        Ipv6 = "ipv6",
        Esp = "esp",
        Ah = "ah",
        Gre = "gre",
        Igmp = "igmp",
    }
}

/// A rule as ufw keeps it: `None` stands for ufw's `any`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Rule {
    pub action: Action,
    pub out: bool,
    pub log: bool,
    pub interface: Option<String>,
    pub from: Option<String>,
    pub from_port: Option<String>,
    pub to: Option<String>,
    pub to_port: Option<String>,
    pub proto: Proto,
    /// An application profile (`OpenSSH`), in place of the port.
    pub app: Option<String>,
    pub comment: Option<String>,
}

/// A word of a rule: ufw prints comments, and application names with a
/// blank, between single quotes.
#[derive(Clone, Debug, PartialEq)]
enum Word {
    Bare(String),
    Quoted(String),
}

impl Rule {
    /// The line `ufw show added` prints for this rule.
    pub(crate) fn line(&self) -> String {
        self.shown(true)
    }

    /// The line without its comment: the rule `ufw delete` removes.
    pub(crate) fn line_without_comment(&self) -> String {
        self.shown(false)
    }

    fn shown(&self, with_comment: bool) -> String {
        let words: Vec<String> = self
            .words(with_comment)
            .into_iter()
            .map(|w| match w {
                Word::Bare(s) => s,
                Word::Quoted(s) => format!("'{s}'"),
            })
            .collect();
        format!("ufw {}", words.join(" "))
    }

    /// The shell arguments after `ufw` (and `delete`, `insert N`).
    pub(crate) fn args(&self, with_comment: bool) -> String {
        let words: Vec<String> = self
            .words(with_comment)
            .iter()
            .map(|(Word::Bare(s) | Word::Quoted(s))| quote(s))
            .collect();
        words.join(" ")
    }

    /// ufw's short syntax (`allow 22/tcp`) is kept for rules that name only
    /// a destination port or application.
    fn short_form(&self) -> bool {
        self.from.is_none()
            && self.to.is_none()
            && self.from_port.is_none()
            && self.interface.is_none()
            && (self.to_port.is_some() || self.app.is_some())
    }

    /// `get_command` of ufw's parser, word for word.
    fn words(&self, with_comment: bool) -> Vec<Word> {
        let mut w = vec![bare(self.action.name())];
        if self.short_form() {
            self.direction_words(&mut w);
            w.push(match (&self.app, &self.to_port) {
                (Some(app), _) => app_word(app),
                (None, Some(port)) if self.proto == Proto::Any => bare(port),
                (None, port) => bare(&format!(
                    "{}/{}",
                    port.as_deref().unwrap_or_default(),
                    self.proto.name()
                )),
            });
        } else {
            self.direction_words(&mut w);
            self.endpoint_words(&mut w);
            if self.proto != Proto::Any && self.app.is_none() {
                w.extend([bare("proto"), bare(self.proto.name())]);
            }
        }
        if let (true, Some(c)) = (with_comment, &self.comment) {
            w.extend([bare("comment"), Word::Quoted(c.clone())]);
        }
        w
    }

    fn direction_words(&self, w: &mut Vec<Word>) {
        let dir = if self.out { "out" } else { "in" };
        match &self.interface {
            Some(i) => w.extend([bare(dir), bare("on"), bare(i)]),
            None if self.out => w.push(bare("out")),
            None => {}
        }
        if self.log {
            w.push(bare("log"));
        }
    }

    fn endpoint_words(&self, w: &mut Vec<Word>) {
        let mut located = false;
        if self.from.is_some() || self.from_port.is_some() {
            w.extend([bare("from"), bare(self.from.as_deref().unwrap_or("any"))]);
            if let Some(p) = &self.from_port {
                w.extend([bare("port"), bare(p)]);
            }
            located = true;
        }
        if self.to.is_some() || self.to_port.is_some() || self.app.is_some() {
            w.extend([bare("to"), bare(self.to.as_deref().unwrap_or("any"))]);
            match (&self.app, &self.to_port) {
                (Some(app), _) => w.extend([bare("app"), app_word(app)]),
                (None, Some(p)) => w.extend([bare("port"), bare(p)]),
                (None, None) => {}
            }
            located = true;
        }
        // ufw marks a rule naming nothing at all as the long syntax this way.
        if !located && self.interface.is_none() {
            w.extend([bare("to"), bare("any")]);
        }
    }
}

fn bare(s: &str) -> Word {
    Word::Bare(s.to_string())
}

fn app_word(app: &str) -> Word {
    if app.contains(' ') {
        Word::Quoted(app.to_string())
    } else {
        bare(app)
    }
}

/// An address as ufw stores it (`normalize_address`): `any` and the
/// all-networks prefixes are `None`; IPv4 networks lose their host bits and
/// a dotted mask becomes a prefix length; host prefixes are dropped.
pub(crate) fn normalize_address(text: &str) -> Result<Option<String>, String> {
    let bad = || format!("'{text}' is not an IPv4 or IPv6 address or network, nor any");
    if text == "any" {
        return Ok(None);
    }
    let (addr, mask) = match text.split_once('/') {
        Some((a, m)) => (a, Some(m)),
        None => (text, None),
    };
    let normal = if addr.contains(':') {
        let ip: Ipv6Addr = addr.parse().map_err(|_| bad())?;
        let len = match mask {
            None => 128,
            Some(m) => prefix(m, 128).ok_or_else(bad)?,
        };
        // ufw keeps an IPv6 network's host bits as given.
        match len {
            0 => return Ok(None),
            128 => ip.to_string(),
            n => format!("{ip}/{n}"),
        }
    } else {
        let ip: Ipv4Addr = addr.parse().map_err(|_| bad())?;
        let len = match mask {
            None => 32,
            Some(m) => prefix(m, 32).or_else(|| dotted_prefix(m)).ok_or_else(bad)?,
        };
        let bits = u32::from(ip) & u32::MAX.checked_shl(32 - len).unwrap_or(0);
        match len {
            0 => return Ok(None),
            32 => ip.to_string(),
            n => format!("{}/{n}", Ipv4Addr::from(bits)),
        }
    };
    Ok(Some(normal))
}

fn prefix(m: &str, max: u32) -> Option<u32> {
    let all_digits = !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit());
    m.parse().ok().filter(|n| all_digits && *n <= max)
}

/// A contiguous dotted mask (255.255.0.0) as its prefix length.
fn dotted_prefix(m: &str) -> Option<u32> {
    let bits = u32::from(m.parse::<Ipv4Addr>().ok()?);
    let len = bits.leading_ones();
    (bits.checked_shl(len).unwrap_or(0) == 0).then_some(len)
}

/// A port as ufw takes it: numbers, `A:B` ranges and comma lists. Service
/// names are refused: ufw stores them as it resolves them, so the line to
/// look for could not be known beforehand.
pub(crate) fn check_port(port: &str, proto: Proto) -> Result<(), String> {
    let number =
        |n: &str| n.bytes().all(|b| b.is_ascii_digit()) && n.parse::<u16>().is_ok_and(|n| n > 0);
    let item = |i: &str| match i.split_once(':') {
        Some((a, b)) => number(a) && number(b),
        None => number(i),
    };
    if !port.split(',').all(item) {
        return Err(format!(
            "port '{port}' must be a number, a range A:B or a comma list of them"
        ));
    }
    let multi = port.contains([',', ':']);
    if multi && !matches!(proto, Proto::Tcp | Proto::Udp) {
        return Err(format!(
            "port '{port}' is a list or range, which ufw takes only with proto tcp or udp"
        ));
    }
    Ok(())
}

/// Text ufw prints between single quotes on a line of its own: it refuses
/// a quote in a comment, and a line break would split the listing.
pub(crate) fn check_text(what: &str, text: &str) -> Result<(), String> {
    if text.contains('\'') || text.chars().any(char::is_control) {
        return Err(format!(
            "{what} '{}' may not hold a single quote or a control character",
            text.escape_debug()
        ));
    }
    Ok(())
}

/// An interface name as the kernel allows it, which ufw prints bare.
pub(crate) fn check_interface(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 15
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-@+".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "interface '{}' is no interface name",
            name.escape_debug()
        ))
    }
}
