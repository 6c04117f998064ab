//! Environment lookups handed to the evaluators: srun's own environment (libc), the job's
//! environment (`spank_getenv` in slurmstepd), or a map in tests.

use std::collections::HashMap;

/// Something that answers "what is variable NAME set to?".
pub trait Env {
    /// The value of `name`, or `None` when it is unset.
    fn get(&self, name: &str) -> Option<String>;

    /// The names of every variable set, when this environment can list them (a lookup function
    /// cannot: empty). Used to name what `--export` without `ALL` leaves behind.
    fn names(&self) -> Vec<String> {
        Vec::new()
    }
}

impl<F: Fn(&str) -> Option<String>> Env for F {
    fn get(&self, name: &str) -> Option<String> {
        self(name)
    }
}

impl Env for HashMap<String, String> {
    fn get(&self, name: &str) -> Option<String> {
        HashMap::get(self, name).cloned()
    }

    fn names(&self) -> Vec<String> {
        self.keys().cloned().collect()
    }
}

impl Env for [(&str, &str)] {
    fn get(&self, name: &str) -> Option<String> {
        self.iter()
            .rev()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }

    fn names(&self) -> Vec<String> {
        self.iter().map(|(k, _)| k.to_string()).collect()
    }
}

/// Parses a positive count such as `SLURM_CPUS_PER_TASK=24`. `None` for garbage, zero, negative
/// or absurd values (more than 1,048,576), which the checks then ignore rather than judge.
pub fn parse_count(s: &str) -> Option<u32> {
    let n: u32 = s.trim().parse().ok()?;
    (1..=1 << 20).contains(&n).then_some(n)
}

/// Counts a Linux CPU list such as `0-191` or `0-3,8-11,16` (`/sys/devices/system/cpu/online`).
/// `None` for anything malformed.
pub fn count_cpu_list(s: &str) -> Option<u32> {
    let mut n: u32 = 0;
    for part in s.trim().split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => {
                let a = part.parse::<u32>().ok()?;
                (a, a)
            }
        };
        n = n.checked_add(b.checked_sub(a)?.checked_add(1)?)?;
    }
    (n > 0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_reject_garbage() {
        for bad in ["abc", "0", "-1", "", "99999999999", "1.5", "1048577"] {
            assert_eq!(parse_count(bad), None, "{bad}");
        }
        assert_eq!(parse_count(" 24 "), Some(24));
    }

    #[test]
    fn cpu_lists_count() {
        assert_eq!(count_cpu_list("0-191\n"), Some(192));
        assert_eq!(count_cpu_list("0-3,8-11,16"), Some(9));
        assert_eq!(count_cpu_list("0"), Some(1));
        for bad in ["", "3-1", "a-b", "0-", ","] {
            assert_eq!(count_cpu_list(bad), None, "{bad}");
        }
    }

    #[test]
    fn slice_env_takes_the_last_binding() {
        let e: &[(&str, &str)] = &[("A", "1"), ("A", "2")];
        assert_eq!(Env::get(e, "A").as_deref(), Some("2"));
        assert_eq!(Env::get(e, "B"), None);
    }
}
