//! Test-only pieces for fake [`workloads::KvTarget`]s: the data operations a fake does not
//! serve, each failing at once as a definitely-unavailable call. Invariant: a fake using
//! these never pretends to have applied anything.

/// The definite failure of an operation a fake node does not serve (or serves while down).
pub(crate) fn down() -> workloads::CallError {
    workloads::CallError::new(workloads::Certainty::Definite, "unavailable", "down")
}

/// `write`, `delete` and `scan`, each failing with [`down`]; expands inside an
/// `impl KvTarget for …` block.
macro_rules! unserved_data_ops {
    () => {
        fn write(
            &self,
            _: &[u8],
            _: &[u8],
        ) -> futures::future::BoxFuture<
            '_,
            workloads::client::CallResult<workloads::client::WriteReply>,
        > {
            Box::pin(async { Err($crate::fake_target::down()) })
        }
        fn delete(
            &self,
            _: &[u8],
        ) -> futures::future::BoxFuture<
            '_,
            workloads::client::CallResult<workloads::client::WriteReply>,
        > {
            Box::pin(async { Err($crate::fake_target::down()) })
        }
        fn scan(
            &self,
            _: &[u8],
            _: &[u8],
            _: u64,
        ) -> futures::future::BoxFuture<
            '_,
            workloads::client::CallResult<workloads::client::ScanReply>,
        > {
            Box::pin(async { Err($crate::fake_target::down()) })
        }
    };
}
pub(crate) use unserved_data_ops;
