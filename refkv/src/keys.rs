//! Key bytes and the half-open ranges built on them, shared by the pure rules (catalog,
//! ownership) and the replicated command format without either importing the other.
//!
//! Invariant: an empty range `end` always means "unbounded".

/// Key bytes. An empty `end` of a range means "unbounded".
pub type Key = Vec<u8>;

/// `key < end`, with an empty `end` meaning unbounded.
pub fn below_end(key: &[u8], end: &[u8]) -> bool {
    end.is_empty() || key < end
}

/// Serde for maps with byte-string keys (JSON object keys must be strings): a list of
/// `[key, value]` pairs.
pub mod pairs {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer, K: Serialize, V: Serialize>(
        m: &BTreeMap<K, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(m.iter())
    }

    pub fn deserialize<'de, D, K, V>(d: D) -> Result<BTreeMap<K, V>, D::Error>
    where
        D: Deserializer<'de>,
        K: Deserialize<'de> + Ord,
        V: Deserialize<'de>,
    {
        let v: Vec<(K, V)> = Deserialize::deserialize(d)?;
        Ok(v.into_iter().collect())
    }
}
