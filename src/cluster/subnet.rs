//! Choosing a private /24 for a run's bridge network that collides with no existing Docker
//! network and no address or route of the host.

use anyhow::{Context, Result};
use std::net::Ipv4Addr;

/// An IPv4 network in CIDR form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub base: Ipv4Addr,
    pub prefix: u8,
}

impl Cidr {
    pub fn parse(s: &str) -> Option<Cidr> {
        let (ip, prefix) = s.split_once('/').unwrap_or((s, "32"));
        let ip: Ipv4Addr = ip.parse().ok()?;
        let prefix: u8 = prefix.parse().ok().filter(|p| *p <= 32)?;
        Some(Cidr {
            base: Ipv4Addr::from(u32::from(ip) & mask(prefix)),
            prefix,
        })
    }

    fn range(self) -> (u32, u32) {
        let lo = u32::from(self.base);
        (lo, lo | !mask(self.prefix))
    }

    pub fn overlaps(self, other: Cidr) -> bool {
        let (a0, a1) = self.range();
        let (b0, b1) = other.range();
        a0 <= b1 && b0 <= a1
    }

    /// The `n`th host address (`n` = 1 is the gateway Docker picks).
    pub fn host(self, n: u32) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.base) + n)
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.base, self.prefix)
    }
}

fn mask(prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix))
    }
}

/// The subnet `docker-compose.yml` uses; runs never pick it.
pub const COMPOSE_SUBNET: &str = "10.77.0.0/24";

/// Candidate subnets 10.77.1.0/24 ... 10.77.254.0/24, starting at a place derived from
/// `seed` so that concurrent runs tend to try different ones first.
pub fn candidates(seed: u32) -> Vec<Cidr> {
    (0..254u32)
        .map(|i| 1 + (seed.wrapping_add(i) % 254))
        .map(|third| Cidr {
            base: Ipv4Addr::new(10, 77, third as u8, 0),
            prefix: 24,
        })
        .collect()
}

/// The first candidate that overlaps none of `taken`.
pub fn pick(seed: u32, taken: &[Cidr]) -> Option<Cidr> {
    candidates(seed)
        .into_iter()
        .find(|c| !taken.iter().any(|t| t.overlaps(*c)))
}

/// Networks in use on the host: Docker's subnets, plus the host's own routes and addresses.
pub async fn taken_subnets() -> Result<Vec<Cidr>> {
    let mut taken: Vec<Cidr> = crate::docker::all_network_subnets()
        .await?
        .iter()
        .filter_map(|s| Cidr::parse(s))
        .collect();
    taken.extend(Cidr::parse(COMPOSE_SUBNET));
    if let Ok(out) = tokio::process::Command::new("ip")
        .args(["-4", "-o", "route", "show", "table", "all"])
        .output()
        .await
    {
        let text = String::from_utf8_lossy(&out.stdout);
        taken.extend(host_route_cidrs(&text));
    }
    Ok(taken)
}

/// Destination networks of `ip -o route` lines, skipping the default route.
fn host_route_cidrs(text: &str) -> Vec<Cidr> {
    text.lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let first = words.next()?;
            let dest = if ["local", "broadcast", "unicast"].contains(&first) {
                words.next()?
            } else {
                first
            };
            (dest != "default").then(|| Cidr::parse(dest)).flatten()
        })
        .collect()
}

/// Parses a `--subnet` argument.
pub fn parse_subnet(s: &str) -> Result<Cidr> {
    let c =
        Cidr::parse(s).with_context(|| format!("{s:?} is not an IPv4 CIDR like 10.77.5.0/24"))?;
    anyhow::ensure!(
        c.prefix <= 28,
        "subnet {s} is too small for a cluster (need at most /28)"
    );
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_is_symmetric_and_respects_prefixes() {
        let a = Cidr::parse("10.77.3.0/24").unwrap();
        let b = Cidr::parse("10.0.0.0/8").unwrap();
        let c = Cidr::parse("10.78.0.0/16").unwrap();
        assert!(a.overlaps(b) && b.overlaps(a));
        assert!(!a.overlaps(c) && !c.overlaps(a));
        assert_eq!(
            Cidr::parse("10.77.3.9/24").unwrap().base,
            Ipv4Addr::new(10, 77, 3, 0)
        );
        assert_eq!(Cidr::parse("nonsense"), None);
        assert_eq!(Cidr::parse("10.0.0.0/40"), None);
    }

    #[test]
    fn pick_skips_taken_subnets_and_the_compose_one() {
        let taken = vec![
            Cidr::parse("10.77.1.0/24").unwrap(),
            Cidr::parse(COMPOSE_SUBNET).unwrap(),
        ];
        let got = pick(0, &taken).unwrap();
        assert_eq!(got.to_string(), "10.77.2.0/24");
        let everything = vec![Cidr::parse("10.0.0.0/8").unwrap()];
        assert_eq!(pick(7, &everything), None);
    }

    #[test]
    fn host_routes_are_parsed_without_the_default_route() {
        let text = "default via 192.168.1.1 dev eth0\n172.17.0.0/16 dev docker0 proto kernel\n\
                    local 10.1.2.3 dev lo table local\nbroadcast 127.255.255.255 dev lo table local\n";
        let got: Vec<String> = host_route_cidrs(text)
            .iter()
            .map(|c| c.to_string())
            .collect();
        assert_eq!(
            got,
            vec!["172.17.0.0/16", "10.1.2.3/32", "127.255.255.255/32"]
        );
    }
}
