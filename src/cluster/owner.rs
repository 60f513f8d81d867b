//! Who owns a run's Docker resources: the harness process, identified by its pid and its
//! start time (so a recycled pid is not mistaken for a live owner). Resources whose owner is
//! gone are stale and may be swept by the next run or by `faultline cleanup`.

/// This process's owner tag, `<pid>:<start ticks>`.
pub fn current_owner() -> String {
    let pid = std::process::id();
    format!("{pid}:{}", start_ticks(pid).unwrap_or(0))
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
