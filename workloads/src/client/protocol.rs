//! The client-side choices a run makes about *how* it talks to a store: the wire protocol
//! of its data operations (`--client grpc|redis`) and how the Redis client reads a set
//! (`--set-read scan|mget`). Both are recorded in `test.json`.
//!
//! Invariant: the default of each is what the store's own users do (gRPC for faultline's
//! targets, `SCAN` for a set read through Redis), so a run that names neither tests the
//! common path.

/// The protocol of a run's data operations (reads, writes, cas, scans).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    #[default]
    Grpc,
    Redis,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Grpc => "grpc",
            Protocol::Redis => "redis",
        }
    }
}

impl std::str::FromStr for Protocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Protocol, String> {
        match s {
            "grpc" => Ok(Protocol::Grpc),
            "redis" => Ok(Protocol::Redis),
            other => Err(format!("unknown client protocol {other:?}: expected grpc or redis")),
        }
    }
}

/// How the Redis client reads the elements of a set (a key range).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SetRead {
    /// `SCAN` with `MATCH` over the range's prefix, paging until the cursor is 0.
    #[default]
    Scan,
    /// `MGET`, in batches, of every key any process of the run attempted to write in the
    /// range (for stores whose `SCAN` is broken).
    Mget,
}

impl SetRead {
    pub fn name(self) -> &'static str {
        match self {
            SetRead::Scan => "scan",
            SetRead::Mget => "mget",
        }
    }
}

impl std::str::FromStr for SetRead {
    type Err = String;
    fn from_str(s: &str) -> Result<SetRead, String> {
        match s {
            "scan" => Ok(SetRead::Scan),
            "mget" => Ok(SetRead::Mget),
            other => Err(format!("unknown set read {other:?}: expected scan or mget")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_unknown_names_are_refused() {
        for p in [Protocol::Grpc, Protocol::Redis] {
            assert_eq!(p.name().parse::<Protocol>(), Ok(p));
        }
        for r in [SetRead::Scan, SetRead::Mget] {
            assert_eq!(r.name().parse::<SetRead>(), Ok(r));
        }
        assert!("resp".parse::<Protocol>().unwrap_err().contains("grpc or redis"));
        assert!("keys".parse::<SetRead>().unwrap_err().contains("scan or mget"));
    }
}
