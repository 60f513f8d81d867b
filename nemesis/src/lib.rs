//! # nemesis — faultline's fault injectors
//!
//! Jepsen's *nemesis*: network partitions (iptables inside each node's network namespace,
//! never the host's), process kills and pauses, packet loss, and forced range splits, each
//! recorded in the history as a start and an end event.
