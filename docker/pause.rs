//! faultline's sandbox process: holds a node's network namespace open for the lifetime of a
//! test, so that a killed or restarted server container keeps its IP address and firewall
//! rules. It does nothing but sleep; as PID 1 it exits on SIGTERM/SIGINT/SIGKILL only
//! because the harness removes the container with `docker rm -f`.
//! Built with plain `rustc` (no dependencies) as a static binary, see `src/image.rs`.

fn main() {
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}
