//! Where the store keeps what a client calls key `k`: the key the store routes (which
//! route, hence which group, serves it). A run records it once, as the watcher event
//! [`super::events::STORE_KEYS`], so that whatever compares a transaction's keys with the
//! catalog (the isolation checker's exercise counts, the aimed split) compares the keys the
//! store really routes, not the client's.
//!
//! - [`StoreKeys::Identity`]: the store routes the client's key itself (refkv's gRPC, and
//!   elastickv's Redis adapter: its internal list and `!redis|…` keys route by the user
//!   key, elastickv `kv/shard_key.go` ~58–110).
//! - [`StoreKeys::DynamoItemKey`]: refkv's DynamoDB subset stores the item with hash key
//!   `k` of table `t` at `k`, a 0 byte, `t` (refkv `dynamo/model.rs`, `item_key`).
//! - [`StoreKeys::DynamoTableRoute`]: elastickv's DynamoDB adapter stores items under
//!   `!ddb|item|<base64url(t)>|<generation>|…`, and routes every one of them by the table's
//!   route key `!ddb|route|table|<base64url(t)>` (`kv/shard_key.go` ~117–150): a whole
//!   table lives in one route.
//! - [`StoreKeys::Unknown`]: not known; counts that need it are left out, never guessed.
//!
//! A DynamoDB run's key `k` lives in table number `(index(k) mod N) + 1` of its N tables
//! ([`table_index`]), elastickv's `dynamodb_multi_table_workload.clj` rule, with `index(k)`
//! the number the key ends with.
//!
//! Invariant: a history without the event is read as [`StoreKeys::Identity`], what every
//! history recorded before the event existed assumed.

use serde::{Deserialize, Serialize};

/// How client keys map to the keys the store routes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(tag = "layout", rename_all = "kebab-case")]
pub enum StoreKeys {
    #[default]
    Identity,
    /// `k`, a 0 byte, the table of `k` (`tables` in order: key `k` is in
    /// `tables[table_index(k, len)]`).
    DynamoItemKey {
        tables: Vec<String>,
    },
    /// `!ddb|route|table|` and the unpadded base64url of the table of `k`.
    DynamoTableRoute {
        tables: Vec<String>,
    },
    Unknown,
}

/// The prefix of elastickv's DynamoDB table route keys.
pub const DYNAMO_ROUTE_PREFIX: &str = "!ddb|route|table|";

/// The number `key` ends with (its decimal digits at the end), if it ends with one.
fn trailing_number(key: &str) -> Option<u64> {
    let digits = key.len() - key.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    key[key.len() - digits..].parse().ok()
}

/// The index (0-based) of the table of `key` among `n` tables: the number the key ends
/// with, modulo `n`; a key ending in no number (no workload of faultline names one so) goes
/// by its bytes' sum, so the rule stays total and stable.
pub fn table_index(key: &str, n: usize) -> usize {
    let n = n.max(1) as u64;
    let index = trailing_number(key)
        .unwrap_or_else(|| key.bytes().map(u64::from).fold(0, u64::wrapping_add));
    (index % n) as usize
}

/// Unpadded base64url (RFC 4648 §5), as elastickv encodes table names in its keys.
pub fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

impl StoreKeys {
    /// The table `key` lives in, for the DynamoDB layouts.
    pub fn table_of(&self, key: &str) -> Option<&str> {
        match self {
            StoreKeys::DynamoItemKey { tables } | StoreKeys::DynamoTableRoute { tables } => tables
                .get(table_index(key, tables.len()))
                .map(String::as_str),
            StoreKeys::Identity | StoreKeys::Unknown => None,
        }
    }

    /// The key the store routes for the client's `key`; `None` when not known.
    pub fn route_key(&self, key: &str) -> Option<String> {
        match self {
            StoreKeys::Identity => Some(key.to_string()),
            StoreKeys::DynamoItemKey { .. } => Some(format!("{key}\0{}", self.table_of(key)?)),
            StoreKeys::DynamoTableRoute { .. } => {
                let table = self.table_of(key)?;
                Some(format!(
                    "{DYNAMO_ROUTE_PREFIX}{}",
                    base64url(table.as_bytes())
                ))
            }
            StoreKeys::Unknown => None,
        }
    }

    /// Where the split nemesis aims for the client's `key`: the key the store routes, or,
    /// when the layout is [`StoreKeys::Unknown`], the client's key itself (the split then
    /// cuts the client's key space, which may hold none of what the store keeps for it).
    pub fn aim_key(&self, key: &str) -> Option<String> {
        match self {
            StoreKeys::Unknown => Some(key.to_string()),
            _ => self.route_key(key),
        }
    }

    /// Whether the store routes the client's keys themselves.
    pub fn is_identity(&self) -> bool {
        *self == StoreKeys::Identity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn four() -> Vec<String> {
        (1..=4).map(|i| format!("jepsen_append_t{i}")).collect()
    }

    #[test]
    fn a_key_goes_to_the_table_its_number_names_modulo_n() {
        assert_eq!(table_index("a/la/000000", 4), 0);
        assert_eq!(table_index("h/la/000007", 4), 3);
        assert_eq!(table_index("r/la/000021", 4), 1);
        assert_eq!(table_index("r/la/000021", 1), 0);
        assert_eq!(table_index("nodigits", 3), table_index("nodigits", 3));
        let layout = StoreKeys::DynamoTableRoute { tables: four() };
        assert_eq!(layout.table_of("h/la/000006"), Some("jepsen_append_t3"));
    }

    #[test]
    fn elastickv_routes_every_item_of_a_table_by_the_tables_route_key() {
        // elastickv's own example (cmd/elastickv-route-key): jepsen_append_t1 →
        // !ddb|route|table|amVwc2VuX2FwcGVuZF90MQ
        let layout = StoreKeys::DynamoTableRoute { tables: four() };
        assert_eq!(
            layout.route_key("a/la/000004").as_deref(),
            Some("!ddb|route|table|amVwc2VuX2FwcGVuZF90MQ")
        );
        assert_eq!(
            layout.route_key("b/la/000008"),
            layout.route_key("a/la/000004")
        );
        assert_eq!(base64url(b"jepsen_append"), "amVwc2VuX2FwcGVuZA");
        assert_eq!(base64url(b"\xfb\xff"), "-_8");
    }

    #[test]
    fn refkv_stores_an_item_at_its_key_then_its_table() {
        let layout = StoreKeys::DynamoItemKey {
            tables: vec!["jepsen_append".into()],
        };
        assert_eq!(
            layout.route_key("c/la/000002").as_deref(),
            Some("c/la/000002\0jepsen_append")
        );
        assert_eq!(StoreKeys::Identity.route_key("k").as_deref(), Some("k"));
        assert_eq!(StoreKeys::Unknown.route_key("k"), None);
        assert_eq!(StoreKeys::Unknown.aim_key("k").as_deref(), Some("k"));
    }

    #[test]
    fn the_layout_round_trips_through_its_json_and_defaults_to_identity() {
        let layout = StoreKeys::DynamoTableRoute { tables: four() };
        let text = serde_json::to_string(&layout).unwrap();
        assert!(
            text.starts_with(r#"{"layout":"dynamo-table-route""#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<StoreKeys>(&text).unwrap(), layout);
        assert_eq!(StoreKeys::default(), StoreKeys::Identity);
    }
}
