//! What srun's plugin already told the user, passed to slurmstepd's plugin so a finding is shown once.
//!
//! srun's plugin sets `SLURM_LAUNCHGUARD_SRUN` in its own environment before the launch. srun copies
//! `SLURM_*` variables into the step's environment even with `--export=NONE` or `--export=FOO=1`
//! (srun(1), `--export`; verified by the integration tests), so slurmstepd's plugin reads it with
//! `spank_getenv`. Value: `v1;cpt=<N|-|*>;ctr=<0|1>;ovl=<0|1>;reported=<finding id>+<finding id>…`.
//!
//! The marker is an environment variable, so any user can set it (with an srun whose plugstack
//! lacks launchguard, nothing overwrites it). It only ever saves printing a line twice: slurmstepd's
//! plugin judges the step from its own facts (`S_STEP_CPUS_PER_TASK` and the `SLURM_*` variables srun
//! acts on) and stays silent about a finding srun's plugin already showed only when that finding
//! does not stop the launch; a rejection is never lifted by the marker
//! ([`crate::checks::cpus_per_task::step_verdict`]). `ctr` only chooses wording and whether a missing
//! `PATH` is expected from a container image.

/// Name of the environment variable.
pub const VAR: &str = "SLURM_LAUNCHGUARD_SRUN";

/// srun's verdict on CPUs per task, as slurmstepd needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CpusMark {
    /// srun predicted this many CPUs per task and judged it (`cpt=N`).
    Predicted(u32),
    /// srun did not judge it (check off, not a GPU step, or options it could not read): slurmstepd
    /// judges the step's real value (`cpt=-`).
    #[default]
    Unjudged,
    /// The step must not be judged on CPUs per task: `--cpus-per-gpu`, `--cpu-bind=none` helper steps,
    /// interactive steps (`cpt=*`). slurmstepd would see 1 there by design.
    Exempt,
}

/// What srun's plugin predicted and reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SrunMarker {
    /// srun's verdict on CPUs per task.
    pub cpus: CpusMark,
    /// The launch uses a Pyxis container (`--container-image`/`--container-name`), whose image may
    /// set `PATH` after slurmstepd's checks run.
    pub container: bool,
    /// An `--overlap` step (monitoring or debugging inside a running job): warn, never reject.
    pub overlap: bool,
    /// Finding IDs already shown to the user by srun's plugin.
    pub reported: Vec<String>,
}

impl SrunMarker {
    /// Encodes the marker as the variable's value.
    pub fn encode(&self) -> String {
        let cpt = match self.cpus {
            CpusMark::Predicted(n) => n.to_string(),
            CpusMark::Unjudged => "-".into(),
            CpusMark::Exempt => "*".into(),
        };
        format!(
            "v1;cpt={cpt};ctr={};ovl={};reported={}",
            u8::from(self.container),
            u8::from(self.overlap),
            self.reported.join("+")
        )
    }

    /// Decodes a value; `None` when it is not a v1 marker (then it is ignored entirely).
    pub fn decode(s: &str) -> Option<SrunMarker> {
        let mut parts = s.split(';');
        if parts.next()? != "v1" {
            return None;
        }
        let mut m = SrunMarker::default();
        for p in parts {
            match p.split_once('=') {
                Some(("cpt", "*")) => m.cpus = CpusMark::Exempt,
                Some(("cpt", v)) => {
                    m.cpus = v.parse().map_or(CpusMark::Unjudged, CpusMark::Predicted)
                }
                Some(("ctr", v)) => m.container = v == "1",
                Some(("ovl", v)) => m.overlap = v == "1",
                Some(("reported", v)) => {
                    m.reported = v
                        .split('+')
                        .filter(|x| !x.is_empty())
                        .take(32)
                        .map(|x| x.chars().take(64).collect())
                        .collect()
                }
                _ => {}
            }
        }
        Some(m)
    }

    /// Whether srun's plugin already showed finding `id`.
    pub fn reported(&self, id: &str) -> bool {
        self.reported.iter().any(|r| r == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for cpus in [CpusMark::Predicted(4), CpusMark::Unjudged, CpusMark::Exempt] {
            let m = SrunMarker {
                cpus,
                container: true,
                overlap: true,
                reported: vec!["launch.export_all".into(), "launch.cpus_per_task".into()],
            };
            assert_eq!(SrunMarker::decode(&m.encode()), Some(m.clone()));
            assert!(m.reported("launch.export_all"));
        }
        let e = SrunMarker::default();
        assert_eq!(e.encode(), "v1;cpt=-;ctr=0;ovl=0;reported=");
        assert_eq!(SrunMarker::decode(&e.encode()), Some(e));
    }

    #[test]
    fn garbage_is_ignored() {
        assert_eq!(SrunMarker::decode("v2;cpt=1"), None);
        assert_eq!(SrunMarker::decode(""), None);
        let m = SrunMarker::decode("v1;cpt=abc;zzz;reported=").unwrap();
        assert_eq!(m.cpus, CpusMark::Unjudged);
    }
}
