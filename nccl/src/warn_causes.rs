//! The cause of one NCCL WARN message: the shared table ([`crate::warn_rules`]) first, then
//! aws-ofi-nccl's own ([`crate::ofi_rules`], only for `NET/OFI` messages). Every judge that turns
//! a WARN into a finding (the log scanner and `nccl check`'s verdict, which `explain` also uses)
//! asks here.

use crate::warn_rules::WarnRule;

/// The first rule that explains the WARN message `msg` (what follows `NCCL WARN `), or `None`.
pub fn explain(msg: &str) -> Option<&'static WarnRule> {
    crate::warn_rules::explain(msg).or_else(|| crate::ofi_rules::explain(msg))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(line: &str) -> &str {
        line.split_once(" NCCL WARN ")
            .map(|(_, m)| m)
            .unwrap_or(line)
    }

    /// aws-ofi-nccl's rules keep their examples when the shared table is asked first, and their
    /// IDs are not the shared table's.
    #[test]
    fn the_plugins_rules_are_reached_through_the_shared_table() {
        for r in crate::ofi_rules::RULES {
            assert!(
                crate::warn_rules::RULES.iter().all(|s| s.id != r.id),
                "{}: also an ID of the shared table",
                r.id
            );
            for e in r.examples {
                assert_eq!(explain(msg(e)).map(|x| x.id), Some(r.id), "{e}");
            }
            for c in r.counter {
                assert_ne!(explain(msg(c)).map(|x| x.id), Some(r.id), "{c}");
            }
        }
        // The shared table's own lines are still its own.
        for r in crate::warn_rules::RULES {
            for e in r.examples {
                assert_eq!(explain(msg(e)).map(|x| x.id), Some(r.id), "{e}");
            }
        }
    }
}
