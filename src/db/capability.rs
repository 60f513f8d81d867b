//! What a target can do, declared once: [`Db::capabilities`](super::Db::capabilities)
//! returns a set of [`Capability`] values instead of one boolean method per question, so a
//! new target says everything it offers in one list and a new question is one variant.
//!
//! Invariants: a capability absent from the set is not offered (the empty set is the most
//! conservative target: a separate server process, any binary, no seeded bugs, no leader
//! read path, no version probes, no catch-up wait, reads not promised linearizable, and a
//! client with no capability beyond the key-value calls). The set is small and unordered;
//! [`Capabilities::has`] is the only question asked of it.

use workloads::{ClientCapability, Protocol};

/// One thing a target offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// The store lives in faultline's own process (no nodes, no image, no server binary):
    /// the run gets an in-process cluster whatever `--cluster` says, and the node-level
    /// faults do not apply.
    InProcess,
    /// The server binary must be a static executable (its node image carries no
    /// libraries), so a `--db-binary` is checked before anything starts.
    StaticBinary,
    /// The store can run with a seeded bug (`--bug`).
    SeededBugs,
    /// `--read-path leader` means something: the client can aim reads at a group leader
    /// instead of the process's own node.
    LeaderReadPath,
    /// After the run the store can be asked which versions it holds for a key
    /// (`KvTarget::as_versioned`: `latest_commit_ts` and `read_at`; the runner's
    /// `store_versions`).
    ProbesVersions,
    /// Recovery must wait for every node to apply what the leaders committed before the
    /// final reads: a store whose nodes serve reads from their own, possibly lagging, state
    /// would otherwise report a lagging node's final read as lost writes.
    CatchUpBeforeFinalReads,
    /// The store promises linearizable reads (which checkers judge it by this:
    /// `analysis::checkers::registry`).
    LinearizableReads,
    /// A workload that loads a hot range for the splitter runs against it although it does
    /// not split ranges (the harness's own target, whose purpose is driving every load).
    HotRangeWithoutSplits,
    /// Its client, speaking `Protocol`, has the client capability (compare-and-set,
    /// transactions).
    Client(Protocol, ClientCapability),
}

/// The set of a target's capabilities.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities(Vec<Capability>);

impl Capabilities {
    /// The set of `list` (a repeated capability counts once).
    pub fn of(list: &[Capability]) -> Capabilities {
        list.iter().copied().collect()
    }

    pub fn has(&self, capability: Capability) -> bool {
        self.0.contains(&capability)
    }

    /// Whether the client speaking `protocol` has every capability of `needs`.
    pub fn client_has_all(&self, protocol: Protocol, needs: &[ClientCapability]) -> bool {
        needs
            .iter()
            .all(|c| self.has(Capability::Client(protocol, *c)))
    }

    /// The protocols among `spoken`, in order, whose client has every capability of `needs`.
    pub fn protocols_with(&self, spoken: &[Protocol], needs: &[ClientCapability]) -> Vec<Protocol> {
        spoken
            .iter()
            .copied()
            .filter(|p| self.client_has_all(*p, needs))
            .collect()
    }
}

impl FromIterator<Capability> for Capabilities {
    fn from_iter<I: IntoIterator<Item = Capability>>(iter: I) -> Capabilities {
        let mut set = Vec::new();
        for c in iter {
            if !set.contains(&c) {
                set.push(c);
            }
        }
        Capabilities(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_answers_only_for_what_it_holds_and_counts_repeats_once() {
        let caps = Capabilities::of(&[
            Capability::SeededBugs,
            Capability::SeededBugs,
            Capability::Client(Protocol::Redis, ClientCapability::Txn),
        ]);
        assert_eq!(caps.0.len(), 2);
        assert!(caps.has(Capability::SeededBugs) && !caps.has(Capability::InProcess));
        assert!(caps.client_has_all(Protocol::Redis, &[ClientCapability::Txn]));
        assert!(!caps.client_has_all(Protocol::Grpc, &[ClientCapability::Txn]));
        assert!(
            caps.client_has_all(Protocol::Grpc, &[]),
            "nothing needed: every protocol serves"
        );
        assert_eq!(
            caps.protocols_with(&[Protocol::Grpc, Protocol::Redis], &[ClientCapability::Txn]),
            [Protocol::Redis]
        );
        assert!(Capabilities::default()
            .protocols_with(&[Protocol::Grpc], &[ClientCapability::Cas])
            .is_empty());
    }
}
