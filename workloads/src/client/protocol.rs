//! The client-side choices a run makes about *how* it talks to a store: the wire protocol
//! of its data operations (`--client grpc|redis|dynamodb|s3|sqs`) and how the Redis client reads a set
//! (`--set-read scan|mget`). Both are recorded in `test.json`.
//!
//! Invariant: the default of each is what the store's own users do (gRPC for faultline's
//! targets, `SCAN` for a set read through Redis), so a run that names neither tests the
//! common path.

crate::named_enum! {
    /// The protocol of a run's data operations (reads, writes, cas, scans).
    pub enum Protocol "client protocol" {
        Grpc = "grpc",
        Redis = "redis",
        /// A DynamoDB-compatible API through the AWS SDK (`client::dynamodb`).
        Dynamodb = "dynamodb",
        /// An S3-compatible API through the AWS SDK (`client::s3`): register reads and
        /// writes as objects.
        S3 = "s3",
        /// An SQS-compatible API through the AWS SDK (`client::sqs`): the `queue`
        /// workload's sends, receives and deletes.
        Sqs = "sqs",
    }
}

crate::named_enum! {
    /// How the Redis client reads the elements of a set (a key range).
    pub enum SetRead "set read" {
        /// `SCAN` with `MATCH` over the range's prefix, paging until the cursor is 0.
        Scan = "scan",
        /// `MGET`, in batches, of every key any process of the run attempted to write in the
        /// range (for stores whose `SCAN` is broken).
        Mget = "mget",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_unknown_names_are_refused() {
        for p in [
            Protocol::Grpc,
            Protocol::Redis,
            Protocol::Dynamodb,
            Protocol::S3,
            Protocol::Sqs,
        ] {
            assert_eq!(p.name().parse::<Protocol>(), Ok(p));
        }
        for r in [SetRead::Scan, SetRead::Mget] {
            assert_eq!(r.name().parse::<SetRead>(), Ok(r));
        }
        assert!("resp"
            .parse::<Protocol>()
            .unwrap_err()
            .contains("grpc, redis, dynamodb, s3 or sqs"));
        assert!("keys"
            .parse::<SetRead>()
            .unwrap_err()
            .contains("scan or mget"));
    }
}
