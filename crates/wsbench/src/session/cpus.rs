//! What a run may use of this machine, decided before anything starts: which CPUs the
//! built-in server and the client's workers get, and whether the connections fit the
//! open-file limits of the client and of the server's processes.

use super::RunError;
use crate::config::RunConfig;

/// Open files the client keeps for itself beyond one per connection.
pub const RESERVED_FILES: u64 = 64;

/// Which CPUs the server and the client workers get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuPlan {
    pub server: Vec<usize>,
    /// One worker per entry.
    pub client: Vec<Option<usize>>,
}

/// With a built-in server on a machine of two or more CPUs, the server gets the first CPU
/// and the client the rest, so neither steals the other's time.
pub fn plan_cpus(config: &RunConfig, allowed: &[usize]) -> CpuPlan {
    let builtin = config.target.is_none();
    let server = match &config.placement.server_cpus {
        Some(cpus) => cpus.clone(),
        None if builtin && allowed.len() >= 2 => vec![allowed[0]],
        None => Vec::new(),
    };
    let client = match &config.placement.client_cpus {
        Some(cpus) => cpus.iter().copied().map(Some).collect(),
        None => {
            let rest: Vec<Option<usize>> =
                allowed.iter().copied().filter(|cpu| !server.contains(cpu)).map(Some).collect();
            if rest.is_empty() { vec![None] } else { rest }
        }
    };
    CpuPlan { server, client }
}

/// Checks the open-file limit (after raising the soft limit) against the connections.
pub fn check_file_limit(connections: u64) -> Result<u64, RunError> {
    let limit = crate::machine::raise_open_file_limit().unwrap_or(1024);
    let needed = connections + RESERVED_FILES;
    if needed > limit {
        return Err(RunError::TooManyConnections {
            wanted: connections,
            needed,
            limit,
            fits: limit.saturating_sub(RESERVED_FILES),
        });
    }
    Ok(limit)
}

/// Checks that the built-in server's processes can hold `connections` (the server inherits
/// the client's open-file limit), allowing 10% for `SO_REUSEPORT`'s uneven spread.
pub fn check_server_processes(connections: u64, processes: u64, limit: u64) -> Result<(), RunError> {
    let per_process = limit.saturating_sub(RESERVED_FILES).max(1);
    let with_spread = connections + connections / 10;
    if processes > 1 && with_spread.div_ceil(processes) > per_process
        || processes == 1 && connections > per_process
    {
        return Err(RunError::ServerTooSmall {
            connections,
            processes,
            limit,
            needed: with_spread.div_ceil(per_process).max(2),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_server_gets_enough_processes() {
        assert!(check_server_processes(19_000, 1, 20_000).is_ok());
        assert!(check_server_processes(25_000, 2, 20_000).is_ok());
        let message = check_server_processes(25_000, 1, 20_000).unwrap_err().to_string();
        assert!(message.ends_with("add --server-processes 2"), "{message}");
        // 10% spare for the kernel's uneven spread over the processes.
        let message = check_server_processes(38_000, 2, 20_000).unwrap_err().to_string();
        assert!(message.ends_with("add --server-processes 3"), "{message}");
    }
}
