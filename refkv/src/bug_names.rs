// The names of refkv's seeded bugs (`--bug NAME`), in the order the detection matrix runs
// them: the one list, included by refkv's `bugs` module and by faultline's
// `src/matrix/configs.rs`. A new bug is a name here, a field and a flag in `bugs.rs`.
pub const BUG_NAMES: [&str; 15] = [
    "no-fence",
    "early-cutover",
    "stale-read",
    "ack-before-commit",
    "split-midpoint",
    "proxy-fence",
    "abandon-keeps-target",
    "resume-skips-delta",
    "no-read-validation",
    "lock-dropped-on-move",
    "ts-from-receiver",
    "commit-to-old-owner",
    "low-ts-commit-escapes-delta",
    "no-post-fence-drain",
    "expired-lock-rolled-back",
];
