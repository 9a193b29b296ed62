//! `ipaddr`, `ipv4`, `ipv6` and `ipwrap`, with the queries and outputs of
//! ansible.utils (which wraps Python's netaddr): a value that is not an
//! address gives `false`, a query that does not apply gives none, and lists
//! keep only the elements that give something truthy.

use std::net::{Ipv4Addr, Ipv6Addr};

use minijinja::{Environment, Error, ErrorKind, Value};

pub(super) fn register(env: &mut Environment<'static>) {
    for prefix in ["", "ansible.utils.", "ansible.netcommon."] {
        env.add_filter(format!("{prefix}ipaddr"), |v: Value, q: Option<Value>| {
            filter(&v, q, None)
        });
        env.add_filter(format!("{prefix}ipv4"), |v: Value, q: Option<Value>| {
            filter(&v, q, Some(32))
        });
        env.add_filter(format!("{prefix}ipv6"), |v: Value, q: Option<Value>| {
            filter(&v, q, Some(128))
        });
        env.add_filter(format!("{prefix}ipwrap"), ipwrap);
    }
}

/// An address with its prefix, as netaddr's `IPNetwork` keeps it: the host
/// bits stay, `network` masks them off.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Net {
    addr: u128,
    /// 32 or 128: the address family.
    bits: u8,
    prefix: u8,
}

/// How the input was written: a bare address prints as one, `a/p` keeps
/// its prefix (netaddr's `vtype`).
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Address,
    Network,
}

impl Net {
    fn host_mask(self) -> u128 {
        let host_bits = u32::from(self.bits - self.prefix);
        1u128.checked_shl(host_bits).map_or(u128::MAX, |n| n - 1) & self.max()
    }
    fn max(self) -> u128 {
        if self.bits == 32 {
            u128::from(u32::MAX)
        } else {
            u128::MAX
        }
    }
    fn network(self) -> u128 {
        self.addr & !self.host_mask()
    }
    fn last(self) -> u128 {
        self.network() | self.host_mask()
    }
    /// Number of addresses; the whole IPv6 space does not fit, so it is
    /// the only one counted in floating point.
    fn size(self) -> Value {
        match 1u128.checked_shl(u32::from(self.bits - self.prefix)) {
            Some(n) => Value::from(n),
            None => Value::from(2f64.powi(128)),
        }
    }
    fn single(self) -> bool {
        self.prefix == self.bits
    }
    /// netaddr has no broadcast for networks of one or two addresses.
    fn broadcast(self) -> Option<u128> {
        (self.bits - self.prefix > 1).then(|| self.last())
    }
    fn show(self, a: u128) -> String {
        if self.bits == 32 {
            Ipv4Addr::from(a as u32).to_string()
        } else {
            Ipv6Addr::from(a).to_string()
        }
    }
    fn ip(self) -> String {
        self.show(self.addr)
    }
    fn cidr(self) -> String {
        format!("{}/{}", self.ip(), self.prefix)
    }
    fn contains(self, other: Net) -> bool {
        self.bits == other.bits
            && other.prefix >= self.prefix
            && other.addr & !self.host_mask() == self.network()
    }
}

fn parse_addr(s: &str) -> Option<(u128, u8)> {
    if let Ok(a) = s.parse::<Ipv4Addr>() {
        return Some((u128::from(u32::from(a)), 32));
    }
    s.parse::<Ipv6Addr>().ok().map(|a| (u128::from(a), 128))
}

/// A prefix written as a length, a netmask (`255.255.255.0`) or a hostmask
/// (`0.0.0.255`), as netaddr takes them.
fn parse_prefix(s: &str, bits: u8) -> Option<u8> {
    if s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().ok().filter(|p| *p <= bits);
    }
    let mask = u32::from(s.parse::<Ipv4Addr>().ok()?);
    if bits != 32 {
        return None;
    }
    let contiguous = |m: u32| m.leading_ones() + m.trailing_zeros() == 32;
    if contiguous(mask) {
        Some(mask.leading_ones() as u8)
    } else if contiguous(!mask) {
        Some(mask.leading_zeros() as u8)
    } else {
        None
    }
}

fn number_net(n: u128, prefix: Option<u8>) -> Option<Net> {
    let bits = if n <= u128::from(u32::MAX) { 32 } else { 128 };
    let prefix = prefix.unwrap_or(bits);
    (prefix <= bits).then_some(Net {
        addr: n,
        bits,
        prefix,
    })
}

/// Parses what netaddr's `IPNetwork` takes, plus the integer forms
/// ansible.utils accepts (`45443646733`, `523454/24`); the string is the
/// value the queries that return their input give back.
fn parse(v: &Value) -> Option<(Net, Shape, String)> {
    if v.is_undefined()
        || v.is_none()
        || !v.is_true()
        || v.kind() == minijinja::value::ValueKind::Bool
    {
        return None;
    }
    let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
    if text.bytes().all(|b| b.is_ascii_digit()) {
        let net = number_net(text.parse().ok()?, None)?;
        return Some((net, Shape::Address, net.cidr()));
    }
    match text.split_once('/') {
        None => {
            let (addr, bits) = parse_addr(&text)?;
            Some((
                Net {
                    addr,
                    bits,
                    prefix: bits,
                },
                Shape::Address,
                text,
            ))
        }
        Some((a, p)) => {
            if let Some((addr, bits)) = parse_addr(a) {
                let prefix = parse_prefix(p, bits)?;
                return Some((Net { addr, bits, prefix }, Shape::Network, text));
            }
            if !a.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let net = number_net(a.parse().ok()?, Some(p.parse().ok()?))?;
            Some((net, Shape::Network, net.cidr()))
        }
    }
}

fn filter(v: &Value, query: Option<Value>, version: Option<u8>) -> Result<Value, Error> {
    let query = query.map_or_else(String::new, |q| {
        q.as_str().map_or_else(|| q.to_string(), str::to_string)
    });
    if v.kind() == minijinja::value::ValueKind::Seq {
        let mut kept = Vec::new();
        for item in v.try_iter()? {
            let r = one(&item, &query, version)?;
            if r.is_true() {
                kept.push(r);
            }
        }
        return Ok(Value::from(kept));
    }
    one(v, &query, version)
}

fn one(v: &Value, query: &str, version: Option<u8>) -> Result<Value, Error> {
    let Some((net, shape, value)) = parse(v) else {
        return Ok(Value::from(false));
    };
    if version.is_some_and(|bits| bits != net.bits) {
        return Ok(Value::from(false));
    }
    if let Some(r) = named_query(net, shape, &value, query)? {
        return Ok(r.unwrap_or(Value::from(())));
    }
    if let Ok(n) = query.parse::<i128>() {
        return Ok(nth(net, shape, n));
    }
    // A network as the query keeps values inside it.
    if let Some((range, Shape::Network, _)) = parse(&Value::from(query)) {
        return Ok(if range.contains(net) {
            Value::from(value)
        } else {
            Value::from(false)
        });
    }
    Err(Error::new(
        ErrorKind::InvalidOperation,
        format!("ipaddr: unknown filter type: {query}"),
    ))
}

/// The `N`th address of a network, counted from its first (negative from
/// its last), with the prefix kept.
fn nth(net: Net, shape: Shape, n: i128) -> Value {
    if net.single() {
        return Value::from(match shape {
            Shape::Address => net.ip(),
            Shape::Network => net.cidr(),
        });
    }
    let size = i128::try_from(net.host_mask()).ok().map(|m| m + 1);
    let offset = match size {
        Some(size) if n < 0 => n + size,
        _ => n,
    };
    let fits = offset >= 0 && size.is_none_or(|size| offset < size);
    if !fits {
        return Value::from(false);
    }
    let addr = net.network() + offset as u128;
    Value::from(format!("{}/{}", net.show(addr), net.prefix))
}

fn not_network(query: &str) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("ipaddr('{query}'): not a network address"),
    )
}

type Answer = Option<Option<Value>>;

/// The named queries; `Ok(None)` when `query` is not one of them, and an
/// inner `None` when it does not apply to this value.
fn named_query(net: Net, shape: Shape, value: &str, query: &str) -> Result<Answer, Error> {
    let s = |x: String| Some(Value::from(x));
    let keep = |yes: bool| yes.then(|| Value::from(value));
    let multi = !net.single();
    let usable = || match net.bits - net.prefix {
        0 => None,
        1 => Some((net.network(), net.last())),
        _ => Some((net.network() + 1, net.last() - 1)),
    };
    let need_network = |q: &str| match shape {
        Shape::Address => Err(not_network(q)),
        Shape::Network => Ok(()),
    };
    Ok(Some(match query {
        "" => match shape {
            Shape::Address => s(net.ip()),
            Shape::Network => s(net.cidr()),
        },
        "address" | "ip" => {
            let host =
                !multi || net.addr != net.network() || net.broadcast().is_none() || net.bits == 128;
            host.then(|| Value::from(net.ip()))
        }
        "host" => {
            let host = !multi || net.addr != net.network() || net.broadcast().is_none();
            host.then(|| Value::from(net.cidr()))
        }
        "address/prefix" | "gateway" | "gw" | "host/prefix" | "hostnet" | "router" => {
            let edge = net.bits - net.prefix > 1
                && (net.addr == net.network() || Some(net.addr) == net.broadcast());
            Some(if edge {
                Value::from(false)
            } else {
                Value::from(net.cidr())
            })
        }
        "ip/prefix" => (multi && (net.bits - net.prefix == 1 || net.addr != net.network()))
            .then(|| Value::from(net.cidr())),
        "bool" => Some(Value::from(true)),
        "broadcast" => net.broadcast().map(|b| Value::from(net.show(b))),
        "cidr" => s(net.cidr()),
        "subnet" | "network/prefix" => s(format!("{}/{}", net.show(net.network()), net.prefix)),
        "network" | "network_id" => s(net.show(net.network())),
        "net" => (multi && net.addr == net.network())
            .then(|| Value::from(format!("{}/{}", net.show(net.network()), net.prefix))),
        "netmask" => s(net.show(!net.host_mask() & net.max())),
        "hostmask" | "wildcard" => s(net.show(net.host_mask())),
        "network_netmask" => s(format!(
            "{} {}",
            net.show(net.network()),
            net.show(!net.host_mask() & net.max())
        )),
        "network_wildcard" => s(format!(
            "{} {}",
            net.show(net.network()),
            net.show(net.host_mask())
        )),
        "ip_netmask" => {
            (multi && (net.bits - net.prefix == 1 || net.addr != net.network())).then(|| {
                Value::from(format!(
                    "{} {}",
                    net.ip(),
                    net.show(!net.host_mask() & net.max())
                ))
            })
        }
        "next_usable" | "previous_usable" => {
            need_network(query)?;
            let step = if query == "next_usable" {
                net.addr.checked_add(1)
            } else {
                net.addr.checked_sub(1)
            };
            usable()
                .zip(step)
                .filter(|((first, last), a)| (first..=last).contains(&a))
                .map(|(_, a)| Value::from(net.show(a)))
        }
        "prefix" => Some(Value::from(net.prefix)),
        "size" => Some(net.size()),
        "size_usable" => Some(match net.bits - net.prefix {
            0 => Value::from(0),
            1 => Value::from(2),
            _ => Value::from(net.host_mask() - 1),
        }),
        "first_usable" => {
            need_network(query)?;
            usable().map(|(first, _)| Value::from(net.show(first)))
        }
        "last_usable" => {
            need_network(query)?;
            usable().map(|(_, last)| Value::from(net.show(last)))
        }
        "range_usable" => {
            need_network(query)?;
            usable().map(|(f, l)| Value::from(format!("{}-{}", net.show(f), net.show(l))))
        }
        "type" => s(if multi && net.addr == net.network() {
            "network"
        } else {
            "address"
        }
        .into()),
        "version" => Some(Value::from(if net.bits == 32 { 4 } else { 6 })),
        "int" => Some(match shape {
            Shape::Address => Value::from(net.addr),
            Shape::Network => Value::from(format!("{}/{}", net.addr, net.prefix)),
        }),
        "ipv4" | "v4" => Some(to_ipv4(net).map_or(Value::from(false), |n| {
            if net.bits == 32 {
                Value::from(value)
            } else {
                Value::from(n.cidr())
            }
        })),
        "ipv6" | "v6" => Some(if net.bits == 128 {
            Value::from(value)
        } else {
            let mapped = Net {
                addr: net.addr | 0xffff_0000_0000,
                bits: 128,
                prefix: net.prefix + 96,
            };
            Value::from(mapped.cidr())
        }),
        "private" => keep(!is_global(net.addr, net.bits)),
        "public" => keep(is_public(net.addr, net.bits)),
        "loopback" | "lo" => keep(in_any(
            net.addr,
            net.bits,
            &[("127.0.0.0", 8), ("::1", 128)],
        )),
        "link-local" => keep(in_any(
            net.addr,
            net.bits,
            &[("169.254.0.0", 16), ("fe80::", 10)],
        )),
        "multicast" => keep(is_multicast(net)),
        "unicast" => keep(!is_multicast(net)),
        "wrap" => s(wrap(net, shape, value)),
        _ => return Ok(None),
    }))
}

/// netaddr's `ipv4()` of an IPv6 value: only the IPv4-compatible and
/// IPv4-mapped ranges convert.
fn to_ipv4(net: Net) -> Option<Net> {
    if net.bits == 32 {
        return Some(net);
    }
    (net.addr <= 0xffff_ffff_ffff && net.prefix >= 96).then(|| Net {
        addr: net.addr & u128::from(u32::MAX),
        bits: 32,
        prefix: net.prefix - 96,
    })
}

fn wrap(net: Net, shape: Shape, value: &str) -> String {
    match (net.bits, shape) {
        (128, Shape::Address) => format!("[{}]", net.ip()),
        (128, Shape::Network) => format!("[{}]/{}", net.ip(), net.prefix),
        _ => value.to_string(),
    }
}

fn in_any(addr: u128, bits: u8, ranges: &[(&str, u8)]) -> bool {
    ranges.iter().any(|(a, p)| {
        parse_addr(a).is_some_and(|(start, b)| {
            Net {
                addr: start,
                bits: b,
                prefix: *p,
            }
            .contains(Net {
                addr,
                bits,
                prefix: bits,
            })
        })
    })
}

fn is_multicast(net: Net) -> bool {
    in_any(net.addr, net.bits, &[("224.0.0.0", 4), ("ff00::", 8)])
}

/// IANA's special-purpose registries, as netaddr's `is_global` reads them.
fn is_global(addr: u128, bits: u8) -> bool {
    const NOT_GLOBAL: &[(&str, u8)] = &[
        ("0.0.0.0", 8),
        ("10.0.0.0", 8),
        ("100.64.0.0", 10),
        ("127.0.0.0", 8),
        ("169.254.0.0", 16),
        ("172.16.0.0", 12),
        ("192.0.0.0", 24),
        ("192.0.2.0", 24),
        ("192.168.0.0", 16),
        ("198.18.0.0", 15),
        ("198.51.100.0", 24),
        ("203.0.113.0", 24),
        ("240.0.0.0", 4),
        ("255.255.255.255", 32),
        ("::1", 128),
        ("::", 128),
        ("::ffff:0:0", 96),
        ("64:ff9b:1::", 48),
        ("100::", 64),
        ("2001::", 23),
        ("2001:db8::", 32),
        ("2002::", 16),
        ("fc00::", 7),
        ("fe80::", 10),
    ];
    const GLOBAL_EXCEPTIONS: &[(&str, u8)] = &[
        ("192.0.0.9", 32),
        ("192.0.0.10", 32),
        ("2001:1::1", 128),
        ("2001:1::2", 128),
        ("2001:3::", 32),
        ("2001:4:112::", 48),
        ("2001:20::", 28),
        ("2001:30::", 28),
    ];
    !in_any(addr, bits, NOT_GLOBAL) || in_any(addr, bits, GLOBAL_EXCEPTIONS)
}

/// ansible.utils' `public`: global unicast that is neither loopback nor
/// shaped like a netmask or hostmask.
fn is_public(addr: u128, bits: u8) -> bool {
    let net = Net {
        addr,
        bits,
        prefix: bits,
    };
    let max = net.max();
    let pow2 = |n: u128| n & n.wrapping_sub(1) == 0;
    let netmask = pow2((addr ^ max).wrapping_add(1));
    let hostmask = pow2(addr.wrapping_add(1));
    !is_multicast(net)
        && is_global(addr, bits)
        && !in_any(addr, bits, &[("127.0.0.0", 8), ("::1", 128)])
        && !netmask
        && !hostmask
}

/// Brackets IPv6 addresses (for URLs and `host:port`), leaving anything
/// else, addresses or not, as it is.
fn ipwrap(v: Value, query: Option<Value>) -> Result<Value, Error> {
    let wrap_one = |item: Value| -> Result<Value, Error> {
        let kept = filter(&item, query.clone(), None)?;
        if !kept.is_true() {
            return Ok(item);
        }
        Ok(match parse(&kept) {
            Some((net, shape, value)) => Value::from(wrap(net, shape, &value)),
            None => item,
        })
    };
    if v.kind() == minijinja::value::ValueKind::Seq {
        let items: Result<Vec<_>, _> = v.try_iter()?.map(wrap_one).collect();
        return Ok(Value::from(items?));
    }
    wrap_one(v)
}

#[cfg(test)]
mod tests;
