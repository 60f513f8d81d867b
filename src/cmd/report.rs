//! `faultline report <run-dir>`: (re)generate a run's self-contained `report.html`.

use crate::exit;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The run directory, e.g. `store/latest` or `store/hotspot/20261129T193000Z`.
    pub run_dir: PathBuf,
    /// Where to write the page (default: `<run-dir>/report.html`).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print how long reading and rendering took, and the page size.
    #[arg(long)]
    pub timing: bool,
}

pub fn run(args: ReportArgs) -> ExitCode {
    match crate::report::generate(&args.run_dir, args.out.as_deref()) {
        Ok(done) => {
            println!("{}", done.path.display());
            if args.timing {
                eprintln!(
                    "report: {} history entries, read {:.2} s, render {:.2} s, total {:.2} s, page {:.2} MB",
                    done.history_entries,
                    done.read_time.as_secs_f64(),
                    done.render_time.as_secs_f64(),
                    (done.read_time + done.render_time).as_secs_f64(),
                    done.bytes as f64 / 1e6
                );
            }
            exit::ok()
        }
        Err(e) => {
            eprintln!("faultline report: {e:#}");
            // An unreadable run directory is the caller's problem; a drawing failure is ours.
            let internal = e.downcast_ref::<crate::report::RenderError>().is_some();
            ExitCode::from(if internal {
                exit::INTERNAL
            } else {
                exit::BAD_ARGS
            })
        }
    }
}
