//! `launchguard nccl check --html FILE` on a generated 64-node pairwise sweep (2,016 pairs, node 7
//! slow): the page is self-contained, and headless Chromium (Debian's `chromium`) renders it to a
//! PNG in which the bad node's heat-map row is red where the healthy rows are green, and no chart is
//! empty. The pixels are counted by `scripts/lib/png_rows.py` (standard-library PNG decoding).
//!
//! Without Chromium the browser half prints why it did not run and passes, unless
//! `LG_REQUIRE_BROWSER=1` (scripts/test.sh sets it and installs chromium), where it fails.
//! `LG_HTML_PNG=PATH` keeps the rendered PNG (docs/images/nccl-sweep-64.png is one).

#[path = "common/browser.rs"]
mod browser;

use std::path::PathBuf;
use std::process::Command;

fn lg() -> Command {
    Command::new(env!("CARGO_BIN_EXE_launchguard"))
}

#[test]
fn html_report_of_a_64_node_sweep_shows_the_bad_node() {
    let dir = std::env::temp_dir().join(format!("lg-html-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let runs = dir.join("runs");
    let g = lg()
        .args([
            "nccl",
            "generate",
            "--nodes",
            "64",
            "--files",
            "2016",
            "--bad-node",
            "7",
            "--out",
        ])
        .arg(&runs)
        .output()
        .unwrap();
    assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let html = dir.join("report.html");
    let c = lg()
        .args(["nccl", "check", "--sku", "p5.48xlarge", "--html"])
        .arg(&html)
        .args(&files)
        .output()
        .unwrap();
    assert!(
        matches!(c.status.code(), Some(0..=2)),
        "nccl check --html: {:?} {}",
        c.status,
        String::from_utf8_lossy(&c.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();

    // Self-contained: three inline SVG charts, nothing loaded from anywhere.
    for id in ["heatmap", "pernode", "sizes"] {
        let at = page
            .find(&format!("<figure id=\"{id}\">"))
            .unwrap_or_else(|| panic!("no {id} chart"));
        assert!(page[at..].trim_start_matches(|c| c != '<').contains("<svg"));
    }
    for bad in [
        "<script", "src=", "href=", "url(", "@import", "<link", "<img",
    ] {
        assert!(!page.contains(bad), "the page fetches something: {bad}");
    }
    let http = page.matches("http").count();
    let xmlns = page.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
    assert_eq!(http, xmlns, "only the SVG namespace may name a URL");
    assert!(
        page.contains("p5en-dy-gpu-7 (bad)"),
        "the flagged node is named"
    );

    let png = dir.join("report.png");
    let Some(r) = browser::browser_rows(&html, &png) else {
        return;
    };
    if let Some(keep) = std::env::var_os("LG_HTML_PNG") {
        std::fs::copy(&png, keep).unwrap();
    }

    // The heat map: the rows with many heat-map cells (healthy green, or red).
    let heat: Vec<usize> = (0..r.len()).filter(|&y| r[y][1] > 200).collect();
    let (top, bottom) = (
        *heat.first().expect("no green heat-map rows"),
        *heat.last().unwrap(),
    );
    assert!(
        heat.len() > 500,
        "{} green rows: the heat map is missing or empty",
        heat.len()
    );
    // Rows inside it that are mostly red: the bad node's row, one band of about one cell.
    let red: Vec<usize> = (top..=bottom)
        .filter(|&y| r[y][0] > 300 && r[y][0] > 5 * r[y][1])
        .collect();
    assert!(!red.is_empty(), "no red row in the heat map");
    let (r0, r1) = (red[0], *red.last().unwrap());
    assert_eq!(
        r1 - r0 + 1,
        red.len(),
        "one contiguous red band, got rows {red:?}"
    );
    let cell = (bottom - top + 1) as f64 / 64.0;
    assert!(
        (red.len() as f64) <= cell * 1.5,
        "the red band is one row ({} px, cells {cell:.1} px)",
        red.len()
    );
    let at = ((r0 + r1) as f64 / 2.0 - top as f64) / cell;
    assert!(
        (6.0..7.5).contains(&at),
        "the red row is node 7 of 64 (row {at:.2})"
    );
    // A healthy row: mostly green, red only where it meets node 7.
    let healthy = (top..=bottom)
        .filter(|&y| !(r0..=r1).contains(&y) && r[y][1] > 500)
        .count();
    assert!(
        healthy as f64 > 50.0 * cell,
        "healthy rows are green ({healthy} rows)"
    );
    let healthy_red = (top..=bottom)
        .filter(|&y| !(r0..=r1).contains(&y))
        .map(|y| r[y][0])
        .max()
        .unwrap();
    assert!(
        healthy_red * 10 < r[(r0 + r1) / 2][0],
        "healthy rows have little red ({healthy_red})"
    );

    // No empty chart: the bars, the median curve and the SKU's reference dot were drawn.
    let total = |k: usize| r[bottom..].iter().map(|x| x[k]).sum::<u32>();
    assert!(total(2) > 20_000, "per-node bars: {} px", total(2));
    assert!(total(3) > 300, "busbw-versus-size curve: {} px", total(3));
    assert!(total(4) > 50, "SKU reference: {} px", total(4));
    let _ = std::fs::remove_dir_all(&dir);
}
