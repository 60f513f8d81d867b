//! The detection matrix: runs `faultline test` against clean refkv and against each seeded
//! bug, several times, each run a child process of this binary (its own cluster, its own
//! store directory, kept), and tabulates which checker caught what.
//!
//! Rows are appended to `<store>/matrix/<timestamp>/rows.jsonl` as runs finish, so an
//! interrupted matrix keeps what it measured; `rows.json` and `table.md` are written at the
//! end (or after Ctrl-C), and the table also into `--out`.

pub mod configs;
pub mod table;

mod child;
mod doc;

pub use child::{read_row, run_matrix, MatrixOutcome, MatrixPlan};
pub use doc::write_out;
