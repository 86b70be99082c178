//! A mix of flows (`[[flow.mix]]`): each connection runs one of them, in proportion to
//! their weights and interleaved (a smooth weighted round-robin over the connections'
//! numbers, so 10 connections of a 1:1 mix run 5 of each, and a 3:1 mix runs its second
//! flow from the fourth connection on, not after every first-flow connection). Checked
//! here: names, weights and their bounds.

use serde::Serialize;

use super::steps::MixSettings;
use crate::units::format::group;

/// Flows a mix may have (each has at least a step, so the flow's step bound is the other).
pub const MAX_MIX_FLOWS: usize = 1_000;
/// The weights of a mix summed: one round of the mix over the connections is this long.
pub const MAX_MIX_WEIGHT: u64 = 10_000;
/// Bytes of a mix flow's name (it prefixes its steps' names in the figures).
const MAX_NAME_BYTES: usize = 32;

/// Where each connection starts: flow `cycle[conn % len]` of the mix, at its first op.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Entries {
    /// The first op of each flow.
    starts: Vec<usize>,
    /// One round of the mix: the flow of each connection number in it.
    cycle: Vec<u16>,
}

impl Entries {
    /// The flows' first ops (in the mix's order), once compiled.
    pub fn starting_at(mut self, starts: Vec<usize>) -> Entries {
        self.starts = starts;
        self
    }

    /// The first op of connection `conn`'s flow (0 for a single flow).
    pub fn start(&self, conn: u64) -> usize {
        if self.cycle.is_empty() {
            return self.starts.first().copied().unwrap_or(0);
        }
        let flow = self.cycle[(conn % self.cycle.len() as u64) as usize] as usize;
        self.starts.get(flow).copied().unwrap_or(0)
    }
}

/// The mix's flows checked (names unique and plain, weights 1 up, their sum bounded) and
/// its round (empty when there is no mix).
pub fn check_mix(mix: &[MixSettings]) -> Result<Entries, String> {
    if mix.len() > MAX_MIX_FLOWS {
        return Err(format!(
            "{} flows in the mix: at most {}",
            group(mix.len() as u64),
            group(MAX_MIX_FLOWS as u64)
        ));
    }
    let mut total: u64 = 0;
    for (n, flow) in mix.iter().enumerate() {
        let plain = flow.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if flow.name.is_empty() || flow.name.len() > MAX_NAME_BYTES || !plain {
            return Err(format!(
                "mix flow {}: name `{}` is 1 to {MAX_NAME_BYTES} letters, digits, `_` or `-`",
                n + 1,
                flow.name
            ));
        }
        if mix[..n].iter().any(|earlier| earlier.name == flow.name) {
            return Err(format!(
                "mix flow {}: a flow named `{}` comes earlier: names must differ",
                n + 1,
                flow.name
            ));
        }
        if flow.weight == 0 {
            return Err(format!("mix flow `{}`: weight is 1 or more", flow.name));
        }
        total = total.saturating_add(flow.weight);
        if total > MAX_MIX_WEIGHT {
            return Err(format!(
                "the mix's weights sum past {}: scale them down (only their ratios matter)",
                group(MAX_MIX_WEIGHT)
            ));
        }
    }
    let weights: Vec<u64> = mix.iter().map(|flow| flow.weight).collect();
    Ok(Entries { starts: Vec::new(), cycle: round(&weights) })
}

/// One round of a smooth weighted round-robin: each flow as often as its weight, spread out.
fn round(weights: &[u64]) -> Vec<u16> {
    let total: i64 = weights.iter().sum::<u64>() as i64;
    let mut current = vec![0i64; weights.len()];
    let mut cycle = Vec::with_capacity(total as usize);
    for _ in 0..total {
        let mut best = 0;
        for (i, weight) in weights.iter().enumerate() {
            current[i] += *weight as i64;
            if current[i] > current[best] {
                best = i;
            }
        }
        current[best] -= total;
        cycle.push(best as u16);
    }
    cycle
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix(flows: &[(&str, u64)]) -> Vec<MixSettings> {
        flows
            .iter()
            .map(|(name, weight)| MixSettings { name: (*name).into(), weight: *weight, steps: Vec::new() })
            .collect()
    }

    #[test]
    fn connections_take_the_flows_in_proportion_and_interleaved() {
        let entries = check_mix(&mix(&[("a", 3), ("b", 1)])).unwrap().starting_at(vec![0, 10]);
        let starts: Vec<usize> = (0..8).map(|conn| entries.start(conn)).collect();
        assert_eq!(starts.iter().filter(|&&s| s == 10).count(), 2, "{starts:?}");
        assert!(starts[..4].contains(&10), "the second flow runs within the first round: {starts:?}");
        let even = check_mix(&mix(&[("a", 500), ("b", 500)])).unwrap().starting_at(vec![0, 7]);
        let first_ten: Vec<usize> = (0..10).map(|conn| even.start(conn)).collect();
        assert_eq!(first_ten.iter().filter(|&&s| s == 7).count(), 5, "{first_ten:?}");
        assert_eq!(Entries::default().starting_at(vec![0]).start(12), 0);
    }

    #[test]
    fn bad_names_and_weights_are_refused_naming_the_bound() {
        let named = |flows: &[(&str, u64)]| check_mix(&mix(flows)).unwrap_err();
        assert!(named(&[("a b", 1)]).contains("name `a b` is 1 to 32"), "{}", named(&[("a b", 1)]));
        assert!(named(&[("a", 1), ("a", 2)]).contains("named `a` comes earlier"));
        assert!(named(&[("a", 0)]).contains("weight is 1 or more"));
        assert!(named(&[("a", 9_000), ("b", 1_001)]).contains("sum past 10,000"));
    }
}
