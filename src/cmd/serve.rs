//! `faultline serve`: serve the store on 127.0.0.1 with a run list linking to each report.

use crate::exit;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The store directory holding `<test>/<timestamp>/` runs.
    #[arg(long, default_value = "store")]
    pub store: PathBuf,
    /// TCP port on 127.0.0.1 (0 picks a free one; the address is printed).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
}

pub fn run(args: ServeArgs) -> ExitCode {
    if !args.store.is_dir() {
        eprintln!(
            "faultline serve: store {} is not a directory (run a test first, or pass --store)",
            args.store.display()
        );
        return ExitCode::from(exit::BAD_ARGS);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("faultline serve: cannot start the async runtime: {e}");
            return ExitCode::from(exit::INTERNAL);
        }
    };
    runtime.block_on(async {
        let listener = match tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!(
                    "faultline serve: cannot listen on 127.0.0.1:{}: {e}",
                    args.port
                );
                return ExitCode::from(exit::BAD_ARGS);
            }
        };
        match listener.local_addr() {
            Ok(addr) => println!(
                "serving {} at http://{addr}/ (Ctrl-C to stop)",
                args.store.display()
            ),
            Err(e) => eprintln!("faultline serve: {e}"),
        }
        tokio::select! {
            result = crate::report::http::serve(args.store.clone(), listener) => match result {
                Ok(()) => exit::ok(),
                Err(e) => {
                    eprintln!("faultline serve: {e:#}");
                    ExitCode::from(exit::INTERNAL)
                }
            },
            _ = tokio::signal::ctrl_c() => exit::ok(),
        }
    })
}
