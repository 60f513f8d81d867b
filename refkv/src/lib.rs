//! # refkv — the reference cluster faultline tests
//!
//! A durable, range-sharded, multi-Raft key-value store (openraft + redb) that speaks the
//! subset of elastickv's gRPC API that faultline uses, plus extension fields carrying the
//! commit metadata the checkers need.
