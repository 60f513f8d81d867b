//! The process exit codes of every `faultline` subcommand, following Jepsen's conventions.
//!
//! Invariant: a verdict's code (0 valid, 1 invalid, 2 unknown) comes only from
//! [`Validity::exit_code`]; this module adds the two codes that are not verdicts.

use analysis::verdict::Validity;
use std::process::ExitCode;

/// Bad command-line arguments or unreadable input.
pub const BAD_ARGS: u8 = 254;
/// An internal error (a bug in faultline, or an environment it cannot work in).
pub const INTERNAL: u8 = 255;

/// The exit code of a verdict.
pub fn of(validity: Validity) -> ExitCode {
    ExitCode::from(validity.exit_code())
}

/// Success: a command that judges nothing finished (`valid`'s code).
pub fn ok() -> ExitCode {
    of(Validity::Valid)
}
