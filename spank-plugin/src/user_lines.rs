//! What one launch prints on the user's terminal: at most [`MAX_LINES`] finding lines per process
//! (srun, or the task that speaks for the step), then one line saying how many more were not shown.
//! A long list of one kind of finding (every device of a `devices=` list missing) would otherwise
//! bury the job's own output; the first lines name the cause and its fix.

use crate::ffi;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Finding lines one process prints to the user at most.
pub const MAX_LINES: usize = 10;

static PRINTED: AtomicUsize = AtomicUsize::new(0);

/// The line that replaces `hidden` finding lines; `where_all` says where the full list is.
pub fn suppressed_line(hidden: usize, where_all: &str) -> String {
    format!(
        "launchguard: {hidden} more finding line{} not shown (at most {MAX_LINES} per launch){where_all}",
        if hidden == 1 { "" } else { "s" }
    )
}

/// Prints `lines` to the user while this process is under [`MAX_LINES`], and one
/// [`suppressed_line`] for the rest. `where_all` (e.g. `"; slurmd's log has them all"`) ends it.
pub fn show(lines: impl IntoIterator<Item = String>, where_all: &str) {
    let mut hidden = 0;
    for l in lines {
        if PRINTED.fetch_add(1, Ordering::Relaxed) < MAX_LINES {
            ffi::log_user(&l);
        } else {
            hidden += 1;
        }
    }
    if hidden > 0 {
        ffi::log_user(&suppressed_line(hidden, where_all));
    }
}
