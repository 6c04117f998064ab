//! Headless Chromium for the HTML report tests (`node-agent/tests/html_report.rs`, and
//! `sweep/tests/multinode.rs`, which includes this file by path): render a page to a PNG and count
//! each pixel row's colours with `scripts/lib/png_rows.py` (red, green, bar, curve, magenta).
//!
//! Without Chromium on `PATH` the caller gets `None` and the reason is printed, unless
//! `LG_REQUIRE_BROWSER=1` (scripts/test.sh sets it and installs chromium), where that is a failure.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Debian's `chromium` (or another Chromium build) on `PATH`.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

/// Renders `html` into `png` (1000×2200 CSS px at scale 1, 120 s limit) and returns, per pixel row,
/// the (red, green, bar, curve, magenta) pixel counts. `None` when Chromium is absent and
/// `LG_REQUIRE_BROWSER` is not `1`; panics when the render or the decoding fails.
pub fn browser_rows(html: &Path, png: &Path) -> Option<Vec<[u32; 5]>> {
    let Some(browser) = chromium() else {
        let msg = "browser check skipped: chromium is not installed (apt-get install chromium)";
        assert!(
            std::env::var("LG_REQUIRE_BROWSER").as_deref() != Ok("1"),
            "{msg}"
        );
        eprintln!("{msg}");
        return None;
    };
    let shot = Command::new("timeout")
        .arg("120")
        .arg(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            "--window-size=1000,2200",
        ])
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    assert!(
        shot.status.success() && png.is_file(),
        "chromium --screenshot: {:?} {}",
        shot.status,
        String::from_utf8_lossy(&shot.stderr)
    );
    let out = Command::new("python3")
        .arg(workspace().join("scripts/lib/png_rows.py"))
        .arg(png)
        .output()
        .expect("python3 scripts/lib/png_rows.py");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| {
                let v: Vec<u32> = l.split(' ').skip(1).map(|x| x.parse().unwrap()).collect();
                [v[0], v[1], v[2], v[3], v[4]]
            })
            .collect(),
    )
}
