//! Who owns a run's resources (Docker containers and networks, netns namespaces): the
//! harness process, identified by its pid and its start time (so a recycled pid is not
//! mistaken for a live owner). Resources whose owner is gone are stale and may be swept by
//! the next run or by `faultline cleanup --stale`.
//!
//! A run started with `--leave-running` is tagged `left-running:<pid>:<start ticks>` from
//! its start: its cluster is meant to outlive the harness, so it is never stale; only
//! `faultline cleanup` (naming the run, or everything) removes it.

/// The prefix of a `--leave-running` run's owner tag.
const LEFT_RUNNING: &str = "left-running:";

/// This process's owner tag, `<pid>:<start ticks>`.
pub fn current_owner() -> String {
    let pid = std::process::id();
    format!("{pid}:{}", start_ticks(pid).unwrap_or(0))
}

/// The owner tag of a run this process starts: [`current_owner`], marked as left running
/// when the run was asked to leave its cluster up.
pub fn run_owner(leave_running: bool) -> String {
    if leave_running {
        format!("{LEFT_RUNNING}{}", current_owner())
    } else {
        current_owner()
    }
}

/// Whether an owner tag marks a run that leaves its cluster up (`--leave-running`).
pub fn left_running(owner: &str) -> bool {
    owner.starts_with(LEFT_RUNNING)
}

/// Whether resources with this owner tag may be swept as stale: their harness is gone and
/// they were not left running on purpose.
pub fn is_stale(owner: &str) -> bool {
    !left_running(owner) && !owner_alive(owner)
}

/// What an owner tag says, for `faultline cleanup --list`.
pub fn describe(owner: &str) -> String {
    let pid = owner
        .trim_start_matches(LEFT_RUNNING)
        .split(':')
        .next()
        .unwrap_or("?");
    let harness = if owner_alive(owner.trim_start_matches(LEFT_RUNNING)) {
        format!("harness {pid} running")
    } else {
        format!("harness {pid} gone")
    };
    if left_running(owner) {
        format!("left running ({harness})")
    } else if owner_alive(owner) {
        harness
    } else {
        format!("stale ({harness})")
    }
}

/// Whether the process named by an owner tag is still running.
pub fn owner_alive(owner: &str) -> bool {
    let Some((pid, ticks)) = owner.split_once(':') else {
        return false;
    };
    let (Ok(pid), Ok(ticks)) = (pid.parse::<u32>(), ticks.parse::<u64>()) else {
        return false;
    };
    match start_ticks(pid) {
        Some(now) => ticks == 0 || now == ticks,
        None => false,
    }
}

/// Field 22 of `/proc/<pid>/stat`: the process start time in clock ticks since boot.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_left_running_run_is_never_stale_even_when_its_harness_is_gone() {
        let gone = "4194304999:1";
        assert!(is_stale(gone));
        let kept = format!("{LEFT_RUNNING}{gone}");
        assert!(left_running(&kept));
        assert!(
            !is_stale(&kept),
            "only `faultline cleanup` removes a left-up cluster"
        );
        assert!(
            !is_stale(&run_owner(false)),
            "a live harness' run is not stale"
        );
        assert!(left_running(&run_owner(true)) && !left_running(&run_owner(false)));
        assert_eq!(describe(&kept), "left running (harness 4194304999 gone)");
        assert_eq!(describe(gone), "stale (harness 4194304999 gone)");
    }

    #[test]
    fn this_process_is_alive_and_a_bogus_owner_is_not() {
        assert!(owner_alive(&current_owner()));
        assert!(!owner_alive("garbage"));
        assert!(!owner_alive("4194304999:1"));
        let me = std::process::id();
        assert!(
            !owner_alive(&format!("{me}:1")),
            "a recycled pid with another start time is dead"
        );
    }
}
