//! Pairwise planning for `launchguard sweep nccl` (the usual bad-node hunt: run pairwise
//! tests, then test each suspect against a known-good node).
//!
//! Round 1 pairs the nodes in order, disjointly: (1,2), (3,4), …; with an odd count the last node is
//! paired with the first as well (that one pair waits for the first node to be free: Slurm runs it
//! after, since every pair job is `--exclusive`). Every node is then in at least one run. With three
//! nodes all three pairs run: two pairs would share a node, and if it were the slow one both runs
//! would be slow and nothing would stand out from the mean.
//!
//! Later rounds re-pair every suspect (a node in a slow or failed run that nothing explains yet) with
//! a known-good node it has not been paired with, each good node and each suspect at most once per
//! round, so the pairs of a round are disjoint. A bad node is slow with two different partners that
//! are good elsewhere: round 1's partner is proven good in round 2 with its own good partner, so a
//! single bad node is named after round 2.

use std::collections::BTreeSet;

/// An unordered pair, stored sorted.
pub type Pair = (String, String);

/// Sorted pair.
pub fn pair(a: &str, b: &str) -> Pair {
    if a <= b {
        (a.to_string(), b.to_string())
    } else {
        (b.to_string(), a.to_string())
    }
}

/// Round 1 over `nodes` (in the order given).
pub fn first_round(nodes: &[String]) -> Vec<Pair> {
    let mut out: Vec<Pair> = nodes
        .chunks(2)
        .filter(|c| c.len() == 2)
        .map(|c| pair(&c[0], &c[1]))
        .collect();
    if nodes.len() % 2 == 1 && nodes.len() >= 3 {
        out.push(pair(&nodes[nodes.len() - 1], &nodes[0]));
    }
    if nodes.len() == 3 {
        // Two pairs out of three nodes share a node: if that node is slow, both runs are slow and
        // nothing stands out from the mean. The third pair gives the good baseline.
        out.push(pair(&nodes[1], &nodes[2]));
    }
    out
}

/// A later round: each suspect with a good node it has not met (`tried` holds every pair run so far).
/// Good nodes are used in the order given (callers put the most proven first); suspects that find no
/// free partner wait for the next round.
pub fn next_round(suspects: &[String], good: &[String], tried: &BTreeSet<Pair>) -> Vec<Pair> {
    let mut used: BTreeSet<&str> = BTreeSet::new();
    let mut out = Vec::new();
    for s in suspects {
        if used.contains(s.as_str()) {
            continue;
        }
        let partner = good.iter().find(|g| {
            *g != s
                && !used.contains(g.as_str())
                && !suspects.contains(g)
                && !tried.contains(&pair(s, g))
        });
        if let Some(g) = partner {
            used.insert(s);
            used.insert(g);
            out.push(pair(s, g));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    #[test]
    fn round_one_covers_every_node_with_disjoint_pairs_plus_the_odd_one() {
        assert_eq!(
            first_round(&names(4)),
            vec![pair("n1", "n2"), pair("n3", "n4")]
        );
        // Three nodes: all three pairs, so a slow n1 is slow against two partners that are fast
        // together (with two pairs, both would contain n1 and nothing would stand out).
        assert_eq!(
            first_round(&names(3)),
            vec![pair("n1", "n2"), pair("n1", "n3"), pair("n2", "n3")]
        );
        assert_eq!(first_round(&names(2)), vec![pair("n1", "n2")]);
        assert!(first_round(&names(1)).is_empty());
        for n in 2..40 {
            let r = first_round(&names(n));
            let covered: BTreeSet<&String> = r.iter().flat_map(|(a, b)| [a, b]).collect();
            assert_eq!(covered.len(), n);
            assert_eq!(r.len(), if n == 3 { 3 } else { n.div_ceil(2) });
        }
    }

    #[test]
    fn suspects_meet_good_nodes_they_have_not_met_once_each() {
        let tried: BTreeSet<Pair> = [pair("n1", "n2"), pair("n3", "n4"), pair("n5", "n6")].into();
        let r = next_round(
            &["n1".into(), "n2".into()],
            &["n3".into(), "n4".into(), "n5".into(), "n6".into()],
            &tried,
        );
        assert_eq!(r, vec![pair("n1", "n3"), pair("n2", "n4")]);
        // No pair repeats, no node twice in a round.
        let tried: BTreeSet<Pair> = [pair("n1", "n3")].into();
        let r = next_round(&["n1".into(), "n2".into()], &["n3".into()], &tried);
        assert_eq!(r, vec![pair("n2", "n3")]);
    }

    #[test]
    fn without_good_nodes_nothing_can_be_planned() {
        assert!(next_round(&["n1".into(), "n2".into()], &[], &BTreeSet::new()).is_empty());
    }
}
