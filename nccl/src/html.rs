//! The `--html FILE` report of `launchguard nccl check` and `launchguard sweep nccl`: one
//! self-contained HTML file (inline SVG and CSS, no scripts, nothing fetched: clusters are often
//! offline) with three charts drawn by `plotters`' SVG backend:
//!
//! 1. `heatmap`: node × node busbw of the pairwise (2-node) runs at the compared size, coloured by
//!    the ratio to the median run without a bad or suspect node (red at or below [`RED_AT`] of it, yellow at the outlier
//!    threshold, green at the median and above; grey where the pair did not run), with every bad
//!    or suspect node's row and column outlined;
//! 2. `pernode`: each node's mean busbw over its runs against that median and, with `--sku`, the
//!    SKU's reference figure;
//! 3. `sizes`: busbw against message size (log scale), the runs' median curve (and the curve of the
//!    runs with a flagged node), against the SKU's reference figures from the baseline table
//!    (`nccl/baselines/seeds.tsv` or `--baseline`), which hold one or two sizes per SKU.
//!
//! A chart without data is left out with one line saying why, never drawn empty. Bandwidths are in
//! GB/s (10^9 bytes per second), as nccl-tests prints them.

use crate::baseline::BaselineEntry;
use crate::outliers::{NodeVerdict, OutlierReport};
use crate::parse::Parsed;
use crate::table::Placement;
use plotters::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// A pair at or below this fraction of the median run is drawn fully red.
pub const RED_AT: f64 = 0.85;
/// Healthy bars (`pernode`).
pub const BAR: RGBColor = RGBColor(70, 130, 180);
/// Bars and curves of flagged (bad or suspect) nodes, and the red end of the heat map.
pub const RED: RGBColor = RGBColor(215, 48, 39);
/// The heat map at the outlier threshold.
pub const YELLOW: RGBColor = RGBColor(254, 224, 139);
/// The heat map at the median and above.
pub const GREEN: RGBColor = RGBColor(26, 152, 80);
/// The median curve (`sizes`).
pub const CURVE: RGBColor = RGBColor(230, 120, 0);
/// Pairs that did not run.
pub const EMPTY: RGBColor = RGBColor(235, 235, 235);

/// What a report shows.
pub struct Input<'a> {
    /// Page title, e.g. `launchguard nccl check`.
    pub title: &'a str,
    /// The command's text report, shown under the charts (escaped).
    pub text: &'a str,
    /// The parsed result files (for the busbw-versus-size curves).
    pub files: &'a [(String, Parsed)],
    /// The pairwise analysis, when there was one.
    pub report: Option<&'a OutlierReport>,
    /// The SKU's reference figures (empty without `--sku`).
    pub baseline: &'a [BaselineEntry],
    /// Which half of each row the charts use.
    pub placement: Placement,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `node-9` before `node-10`: digits compare as numbers.
fn natural_key(s: &str) -> Vec<(String, u64)> {
    let mut out = vec![];
    let mut text = String::new();
    let mut num: Option<u64> = None;
    for c in s.chars() {
        if let Some(d) = c.to_digit(10) {
            num = Some(num.unwrap_or(0).saturating_mul(10).saturating_add(d as u64));
        } else {
            if let Some(n) = num.take() {
                out.push((std::mem::take(&mut text), n));
            }
            text.push(c);
        }
    }
    out.push((text, num.unwrap_or(0)));
    out
}

fn lerp(a: RGBColor, b: RGBColor, t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0);
    let m = |x: u8, y: u8| (x as f64 + (y as f64 - x as f64) * t).round() as u8;
    RGBColor(m(a.0, b.0), m(a.1, b.1), m(a.2, b.2))
}

/// The heat map's colour for a pair at `ratio` of the median run, with outlier threshold `thr`.
pub fn heat_colour(ratio: f64, thr: f64) -> RGBColor {
    let warn = (1.0 - thr).max(RED_AT + 0.01);
    if ratio >= warn {
        lerp(YELLOW, GREEN, (ratio - warn) / (1.0 - warn).max(1e-9))
    } else {
        lerp(RED, YELLOW, (ratio - RED_AT) / (warn - RED_AT))
    }
}

/// Pairwise figures: nodes in natural order, mean busbw per unordered pair, the median healthy run.
struct Pairs {
    nodes: Vec<String>,
    cells: BTreeMap<(usize, usize), f64>,
    median: f64,
    threshold: f64,
    flagged: BTreeMap<String, NodeVerdict>,
    size: Option<u64>,
}

fn pairs(r: &OutlierReport) -> Option<Pairs> {
    let g = r.groups.iter().max_by_key(|g| g.samples.len())?;
    let two: Vec<_> = g.samples.iter().filter(|s| s.hosts.len() == 2).collect();
    let flagged: BTreeMap<String, NodeVerdict> = r
        .nodes
        .iter()
        .map(|n| (n.host.clone(), n.verdict))
        .collect();
    // The reference: the median of the runs without a flagged node (on a small sweep most runs can
    // include the bad node, which would make its slowness the median), else of every run.
    let mut healthy: Vec<f64> = two
        .iter()
        .filter(|s| !s.hosts.iter().any(|h| flagged.contains_key(h)))
        .map(|s| s.busbw)
        .collect();
    let reference = median(&mut healthy).unwrap_or(g.median);
    if two.is_empty() || reference.is_nan() || reference <= 0.0 {
        return None;
    }
    let mut names: BTreeSet<&str> = two
        .iter()
        .flat_map(|s| s.hosts.iter().map(String::as_str))
        .collect();
    names.extend(r.nodes.iter().map(|n| n.host.as_str()));
    let mut nodes: Vec<String> = names.into_iter().map(String::from).collect();
    nodes.sort_by_key(|n| natural_key(n));
    let idx: BTreeMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut sums: BTreeMap<(usize, usize), (f64, u32)> = BTreeMap::new();
    for s in two {
        let (a, b) = (idx[s.hosts[0].as_str()], idx[s.hosts[1].as_str()]);
        for key in [(a, b), (b, a)] {
            let e = sums.entry(key).or_default();
            e.0 += s.busbw;
            e.1 += 1;
        }
    }
    Some(Pairs {
        nodes,
        cells: sums
            .into_iter()
            .map(|(k, (s, n))| (k, s / n as f64))
            .collect(),
        median: reference,
        threshold: r.threshold,
        flagged,
        size: r.size,
    })
}

fn size_label(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", U[i])
    } else {
        format!("{v:.1} {}", U[i])
    }
}

type Drawn = Result<String, String>;

/// `(size in bytes, busbw in GB/s)` points of one curve.
type Curve = Vec<(u64, f64)>;

fn svg_err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

/// Chart 1: the heat map. Cells are square; about 11 px each at 64 nodes.
fn heatmap(p: &Pairs) -> Drawn {
    let n = p.nodes.len();
    let cell = (704 / n.max(1)).clamp(4, 40) as u32;
    let plot = cell * n as u32;
    let (left, top, right) = (120u32, 40u32, 20u32);
    let (w, h) = (left + plot + right, top + plot + 60);
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(svg_err)?;
        let size = p
            .size
            .map(size_label)
            .unwrap_or_else(|| "the largest size".into());
        let mut c = ChartBuilder::on(&root)
            .caption(
                format!(
                    "pairwise busbw at {size}, as a share of the median healthy run ({:.1} GB/s)",
                    p.median
                ),
                ("sans-serif", 15),
            )
            .margin_top(8)
            .margin_right(right)
            .x_label_area_size(40)
            .y_label_area_size(left - 10)
            .build_cartesian_2d(0f64..n as f64, n as f64..0f64)
            .map_err(svg_err)?;
        let every = n.div_ceil(32).max(1);
        let names = p.nodes.clone();
        let label = move |v: &f64| {
            let i = v.floor() as usize;
            if (v - v.floor() - 0.5).abs() < 1e-6 && i < names.len() && i % every == 0 {
                names[i].clone()
            } else {
                String::new()
            }
        };
        let xl = label.clone();
        c.configure_mesh()
            .disable_mesh()
            .x_labels(n.min(64) * 2 + 1)
            .y_labels(n.min(64) * 2 + 1)
            .x_label_formatter(&move |v| {
                let t = xl(v);
                t.rsplit(['-', '_']).next().unwrap_or("").to_string()
            })
            .y_label_formatter(&label)
            .label_style(("sans-serif", 10))
            .x_desc("partner node")
            .draw()
            .map_err(svg_err)?;
        let cells = (0..n).flat_map(|i| (0..n).map(move |j| (i, j)));
        c.draw_series(cells.map(|(i, j)| {
            let colour = match p.cells.get(&(i, j)) {
                Some(v) => heat_colour(v / p.median, p.threshold),
                None => EMPTY,
            };
            Rectangle::new(
                [(j as f64, i as f64), (j as f64 + 1.0, i as f64 + 1.0)],
                colour.filled(),
            )
        }))
        .map_err(svg_err)?;
        for (i, node) in p.nodes.iter().enumerate() {
            if p.flagged.contains_key(node) {
                let (a, b) = (i as f64, i as f64 + 1.0);
                for r in [[(0.0, a), (n as f64, b)], [(a, 0.0), (b, n as f64)]] {
                    c.draw_series(std::iter::once(Rectangle::new(r, BLACK.stroke_width(2))))
                        .map_err(svg_err)?;
                }
            }
        }
        root.present().map_err(svg_err)?;
    }
    Ok(s)
}

/// Chart 2: each node's mean busbw over its pairwise runs.
fn pernode(p: &Pairs, sku: Option<&BaselineEntry>) -> Drawn {
    let n = p.nodes.len();
    let means: Vec<Option<f64>> = (0..n)
        .map(|i| {
            let v: Vec<f64> = (0..n)
                .filter_map(|j| p.cells.get(&(i, j)).copied())
                .collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        })
        .collect();
    let top = means
        .iter()
        .flatten()
        .copied()
        .chain([p.median])
        .chain(sku.map(|e| e.busbw))
        .fold(0.0, f64::max)
        * 1.15;
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (900, 380)).into_drawing_area();
        root.fill(&WHITE).map_err(svg_err)?;
        let mut c = ChartBuilder::on(&root)
            .caption(
                "busbw per node (mean of its pairwise runs) against the median healthy run",
                ("sans-serif", 15),
            )
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..n as f64, 0f64..top)
            .map_err(svg_err)?;
        let names = p.nodes.clone();
        let every = n.div_ceil(16).max(1);
        c.configure_mesh()
            .disable_x_mesh()
            .x_labels(n.min(64) * 2 + 1)
            .x_label_formatter(&move |v| {
                let i = v.floor() as usize;
                if (v - v.floor() - 0.5).abs() < 1e-6 && i < names.len() && i % every == 0 {
                    names[i].rsplit(['-', '_']).next().unwrap_or("").to_string()
                } else {
                    String::new()
                }
            })
            .y_desc("busbw (GB/s)")
            .x_desc("node")
            .label_style(("sans-serif", 11))
            .draw()
            .map_err(svg_err)?;
        c.draw_series(means.iter().enumerate().filter_map(|(i, m)| {
            let m = (*m)?;
            let colour = if p.flagged.contains_key(&p.nodes[i]) {
                RED
            } else {
                BAR
            };
            Some(Rectangle::new(
                [(i as f64 + 0.15, 0.0), (i as f64 + 0.85, m)],
                colour.filled(),
            ))
        }))
        .map_err(svg_err)?;
        c.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, p.median), (n as f64, p.median)],
            BLACK.stroke_width(2),
        )))
        .map_err(svg_err)?
        .label(format!("median healthy run {:.1} GB/s", p.median))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
        let warn = p.median * (1.0 - p.threshold);
        c.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, warn), (n as f64, warn)],
            RGBColor(120, 120, 120).stroke_width(1),
        )))
        .map_err(svg_err)?
        .label(format!("outlier threshold −{:.0}%", p.threshold * 100.0))
        .legend(|(x, y)| {
            PathElement::new(
                vec![(x, y), (x + 20, y)],
                RGBColor(120, 120, 120).stroke_width(1),
            )
        });
        if let Some(e) = sku {
            c.draw_series(std::iter::once(PathElement::new(
                vec![(0.0, e.busbw), (n as f64, e.busbw)],
                MAGENTA.stroke_width(2),
            )))
            .map_err(svg_err)?
            .label(format!(
                "{} reference {:.0} GB/s at {}",
                e.sku,
                e.busbw,
                size_label(e.size)
            ))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], MAGENTA.stroke_width(2)));
        }
        c.configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 11))
            .draw()
            .map_err(svg_err)?;
        root.present().map_err(svg_err)?;
    }
    Ok(s)
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// Chart 3: busbw against message size. At most 8 files: one curve each; more: the median curve
/// of the runs without a flagged node and of the runs with one.
fn sizes(input: &Input, flagged: &BTreeSet<String>) -> Option<Drawn> {
    // (file, has a flagged host, [(size, busbw)]) from each file's first table.
    let curves: Vec<(&str, bool, Curve)> = input
        .files
        .iter()
        .filter_map(|(name, p)| {
            let t = p.tables.iter().find(|t| !t.rows.is_empty())?;
            let pts: Vec<(u64, f64)> = t
                .rows
                .iter()
                .filter(|r| r.size > 0)
                .filter_map(|r| Some((r.size, r.half(input.placement)?.busbw)))
                .collect();
            let bad = p.facts.hosts.iter().any(|h| flagged.contains(h));
            (!pts.is_empty()).then_some((name.as_str(), bad, pts))
        })
        .collect();
    if curves.is_empty() {
        return None;
    }
    let mut series: Vec<(String, RGBColor, Curve)> = vec![];
    if curves.len() <= 8 {
        let palette = [
            CURVE,
            BAR,
            RED,
            GREEN,
            MAGENTA,
            BLACK,
            CYAN,
            RGBColor(120, 80, 160),
        ];
        for (k, (name, _, pts)) in curves.iter().enumerate() {
            let short = name.rsplit('/').next().unwrap_or(name);
            series.push((short.to_string(), palette[k % palette.len()], pts.clone()));
        }
    } else {
        for (bad, label, colour) in [
            (false, "median of the runs without a flagged node", CURVE),
            (true, "median of the runs with a flagged node", RED),
        ] {
            let mut by: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
            let mut runs = 0;
            for (_, b, pts) in curves.iter().filter(|c| c.1 == bad) {
                let _ = b;
                runs += 1;
                for (sz, bw) in pts {
                    by.entry(*sz).or_default().push(*bw);
                }
            }
            let pts: Vec<(u64, f64)> = by
                .into_iter()
                .filter_map(|(sz, mut v)| Some((sz, median(&mut v)?)))
                .collect();
            if !pts.is_empty() {
                series.push((format!("{label} ({runs})"), colour, pts));
            }
        }
    }
    let collective = input
        .files
        .iter()
        .flat_map(|(_, p)| &p.tables)
        .find_map(|t| t.collective_base())
        .map(|c| c.trim_end_matches("_perf").to_string());
    let all = series.iter().flat_map(|s| &s.2);
    let (lo, hi) = all
        .clone()
        .fold((u64::MAX, 0u64), |(a, b), (s, _)| (a.min(*s), b.max(*s)));
    let base: Vec<&BaselineEntry> = input
        .baseline
        .iter()
        .filter(|e| e.size > 0 && collective.as_deref().map_or(true, |c| c == e.collective))
        .collect();
    let (lo, hi) = base
        .iter()
        .fold((lo, hi), |(a, b), e| (a.min(e.size), b.max(e.size)));
    let top = all
        .map(|p| p.1)
        .chain(base.iter().map(|e| e.busbw))
        .fold(0.0, f64::max)
        .max(1e-3)
        * 1.15;
    let (x0, x1) = (
        (lo as f64).log2().floor(),
        (hi as f64).log2().ceil().max((lo as f64).log2() + 1.0),
    );
    let mut s = String::new();
    let drawn = (|| -> Result<(), String> {
        let root = SVGBackend::with_string(&mut s, (900, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(svg_err)?;
        let mut c = ChartBuilder::on(&root)
            .caption("busbw against message size", ("sans-serif", 15))
            .margin(10)
            .margin_right(36)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, 0f64..top)
            .map_err(svg_err)?;
        c.configure_mesh()
            .x_labels(((x1 - x0) as usize / 2).max(2) + 1)
            .x_label_formatter(&|v| size_label(2f64.powf(v.round()) as u64))
            .y_desc("busbw (GB/s)")
            .x_desc("message size")
            .label_style(("sans-serif", 11))
            .draw()
            .map_err(svg_err)?;
        for (label, colour, pts) in &series {
            let colour = *colour;
            c.draw_series(std::iter::once(PathElement::new(
                pts.iter()
                    .map(|(sz, bw)| ((*sz as f64).log2(), *bw))
                    .collect::<Vec<_>>(),
                colour.stroke_width(3),
            )))
            .map_err(svg_err)?
            .label(label.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(3))
            });
        }
        if !base.is_empty() {
            c.draw_series(
                base.iter()
                    .map(|e| Circle::new(((e.size as f64).log2(), e.busbw), 6, MAGENTA.filled())),
            )
            .map_err(svg_err)?
            .label(format!(
                "{} reference ({})",
                base[0].sku,
                base.iter()
                    .map(|e| format!(
                        "{} {:.0} GB/s at {}",
                        e.collective,
                        e.busbw,
                        size_label(e.size)
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .legend(|(x, y)| Circle::new((x + 10, y), 5, MAGENTA.filled()));
        }
        c.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 11))
            .draw()
            .map_err(svg_err)?;
        root.present().map_err(svg_err)
    })();
    Some(drawn.map(|_| s))
}

fn figure(out: &mut String, id: &str, caption: &str, svg: Option<Drawn>, none: &str) {
    match svg {
        Some(Ok(svg)) => {
            out.push_str(&format!(
                "<figure id=\"{id}\">\n{svg}\n<figcaption>{}</figcaption>\n</figure>\n",
                esc(caption)
            ));
        }
        Some(Err(e)) => out.push_str(&format!(
            "<p class=\"none\" id=\"{id}\">chart not drawn: {}</p>\n",
            esc(&e)
        )),
        None => out.push_str(&format!(
            "<p class=\"none\" id=\"{id}\">{}</p>\n",
            esc(none)
        )),
    }
}

/// The whole page.
pub fn render(input: &Input) -> String {
    let pairs = input.report.and_then(pairs);
    let flagged: BTreeSet<String> = pairs
        .as_ref()
        .map(|p| p.flagged.keys().cloned().collect())
        .unwrap_or_default();
    let collective = input
        .report
        .and_then(|r| r.groups.iter().max_by_key(|g| g.samples.len()))
        .and_then(|g| g.collective.clone());
    let sku = pairs.as_ref().and_then(|p| {
        let size = p.size?;
        input
            .baseline
            .iter()
            .filter(|e| {
                collective
                    .as_deref()
                    .map_or(true, |c| c.trim_end_matches("_perf") == e.collective)
            })
            .min_by_key(|e| e.size.abs_diff(size))
    });
    let mut o = String::new();
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    o.push_str(&format!("<title>{}</title>\n", esc(input.title)));
    o.push_str("<style>body{font-family:sans-serif;margin:16px;color:#222}figure{margin:0 0 24px 0}figcaption{font-size:13px;color:#444;max-width:900px}pre{font-size:12px;background:#f6f6f6;padding:8px;white-space:pre-wrap}p.none{color:#555;font-style:italic}</style>\n</head>\n<body>\n");
    o.push_str(&format!("<h1>{}</h1>\n", esc(input.title)));
    if !flagged.is_empty() {
        let list: Vec<String> = pairs
            .as_ref()
            .map(|p| {
                p.flagged
                    .iter()
                    .map(|(n, v)| {
                        format!(
                            "{n} ({})",
                            if *v == NodeVerdict::Bad {
                                "bad"
                            } else {
                                "suspect"
                            }
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        o.push_str(&format!(
            "<p><strong>Flagged nodes:</strong> {}</p>\n",
            esc(&list.join(", "))
        ));
    }
    figure(
        &mut o,
        "heatmap",
        "Each cell is the busbw of the run of the row's node with the column's node, as a share of the median run without a flagged node: red at or below 85%, yellow at the outlier threshold, green at the median or above; grey: the pair did not run. Outlined: the bad and suspect nodes.",
        pairs.as_ref().map(heatmap),
        "No heat map: no pairwise (2-node) run with a busbw figure.",
    );
    figure(
        &mut o,
        "pernode",
        "Each node's mean busbw over its pairwise runs; red: a bad or suspect node. The black line is the median run without a flagged node, the grey one the outlier threshold, the magenta one the SKU's reference figure (--sku).",
        pairs.as_ref().map(|p| pernode(p, sku)),
        "No per-node chart: no pairwise (2-node) run with a busbw figure.",
    );
    figure(
        &mut o,
        "sizes",
        "busbw at each message size; magenta dots: the SKU's reference figures from the baseline table (--sku, --baseline), which hold one or two sizes per SKU.",
        sizes(input, &flagged),
        "No size chart: no result table with a busbw figure.",
    );
    o.push_str(&format!(
        "<h2>Report</h2>\n<pre>{}</pre>\n</body>\n</html>\n",
        esc(input.text)
    ));
    o
}

/// Writes `html` to `path` (the `--html FILE` option); the error names the file.
pub fn write(path: &std::path::Path, html: &str) -> Result<(), String> {
    std::fs::write(path, html).map_err(|e| format!("cannot write '{}': {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_run_from_red_through_yellow_to_green() {
        assert_eq!(heat_colour(0.5, 0.05), RED);
        assert_eq!(heat_colour(0.85, 0.05), RED);
        assert_eq!(heat_colour(0.95, 0.05), YELLOW);
        assert_eq!(heat_colour(1.0, 0.05), GREEN);
        assert_eq!(heat_colour(1.3, 0.05), GREEN);
    }

    #[test]
    fn nodes_sort_naturally() {
        let mut v = vec!["n-10", "n-9", "n-1"];
        v.sort_by_key(|n| natural_key(n));
        assert_eq!(v, ["n-1", "n-9", "n-10"]);
    }

    #[test]
    fn sizes_read_as_binary_units() {
        assert_eq!(size_label(8), "8 B");
        assert_eq!(size_label(1 << 34), "16 GiB");
        assert_eq!(size_label(1536), "1.5 KiB");
    }

    #[test]
    fn a_page_without_data_says_so_and_fetches_nothing() {
        let html = render(&Input {
            title: "t <x>",
            text: "a & b",
            files: &[],
            report: None,
            baseline: &[],
            placement: Placement::OutOfPlace,
        });
        assert!(html.contains("No heat map") && html.contains("No size chart"));
        assert!(html.contains("t &lt;x&gt;") && html.contains("a &amp; b"));
        assert!(!html.contains("<svg"));
    }
}
