//! One plot per workload, as SVG and PNG, drawn by plotters with an
//! embedded DejaVu Sans font (ab_glyph): no fontconfig, no system fonts.
//!
//! Throughput workloads: ops/s against threads, one line per target, log
//! scale when the spread between targets is over `LOG_SPREAD`. readdir-large
//! plots its readdir phase (dirents/s). lockref-recovery plots each
//! interval's stat rate relative to the undisturbed rate.

use super::si;
use crate::results::{Results, Row};
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::ops::Range;
use std::path::Path;

/// Above this max/min ratio of the plotted values the y axis is logarithmic.
pub const LOG_SPREAD: f64 = 20.0;

static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let ok = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok();
        debug_assert!(ok, "the embedded font parses");
    });
}

/// A line chart.
pub struct Chart {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    /// (label, points), one line each.
    pub series: Vec<(String, Vec<(f64, f64)>)>,
    /// Allow a log y axis when the spread needs it.
    pub log_ok: bool,
    /// Print y labels in engineering notation.
    pub si_labels: bool,
}

fn color(i: usize, label: &str) -> RGBColor {
    match label {
        "vfscale" => RGBColor(0xd6, 0x27, 0x28),
        "kernel" => RGBColor(0x1f, 0x77, 0xb4),
        "global-lock" => RGBColor(0x55, 0x55, 0x55),
        "vfs-memoryfs" => RGBColor(0x2c, 0xa0, 0x2c),
        "virtual-filesystem" => RGBColor(0xff, 0x7f, 0x0e),
        _ => {
            let p = [
                RGBColor(0x94, 0x67, 0xbd),
                RGBColor(0x8c, 0x56, 0x4b),
                RGBColor(0xe3, 0x77, 0xc2),
                RGBColor(0x17, 0xbe, 0xcf),
            ];
            p[i % p.len()]
        }
    }
}

impl Chart {
    fn ranges(&self) -> (Range<f64>, f64, f64) {
        let pts = self.series.iter().flat_map(|(_, p)| p.iter());
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for &(x, y) in pts {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
        }
        let pad = ((x1 - x0) * 0.05).max(0.2);
        (x0 - pad..x1 + pad, y0, y1)
    }

    /// Whether the y axis is logarithmic.
    pub fn log_y(&self) -> bool {
        let (_, y0, y1) = self.ranges();
        self.log_ok && y0 > 0.0 && y1 / y0 > LOG_SPREAD
    }

    /// Draws on any plotters backend.
    pub fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        register_font();
        let (xr, y0, y1) = self.ranges();
        if self.log_y() {
            let y = LogCoord::from((y0 / 1.5..y1 * 1.5).log_scale());
            self.draw_with(root, xr, y)
        } else {
            let y = RangedCoordf64::from(0.0..(y1 * 1.1).max(f64::MIN_POSITIVE));
            self.draw_with(root, xr, y)
        }
    }

    fn draw_with<DB, Y>(
        &self,
        root: &DrawingArea<DB, Shift>,
        xr: Range<f64>,
        y: Y,
    ) -> Result<(), String>
    where
        DB: DrawingBackend,
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let e = |e: &dyn std::fmt::Display| format!("plot {}: {e}", self.title);
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 24))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(84)
            .build_cartesian_2d(RangedCoordf64::from(xr), y)
            .map_err(|x| e(&x))?;
        let si_labels = self.si_labels;
        let y_fmt = move |v: &f64| {
            if si_labels {
                si(*v)
            } else {
                format!("{v:.2}")
            }
        };
        let x_fmt = |v: &f64| {
            if (v - v.round()).abs() < 1e-6 {
                format!("{v:.0}")
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .x_desc(&self.x_desc)
            .y_desc(&self.y_desc)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 17))
            .draw()
            .map_err(|x| e(&x))?;
        for (i, (label, pts)) in self.series.iter().enumerate() {
            let c = color(i, label);
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                .map_err(|x| e(&x))?
                .label(label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))
                .map_err(|x| e(&x))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 15))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|x| e(&x))?;
        root.present().map_err(|x| e(&x))
    }

    /// Writes `<base>.svg` and `<base>.png`.
    pub fn write(&self, base: &Path) -> Result<(), String> {
        let size = (960, 600);
        let svg = base.with_extension("svg");
        self.draw(&SVGBackend::new(&svg, size).into_drawing_area())?;
        let png = base.with_extension("png");
        let area = BitMapBackend::new(&png, size).into_drawing_area();
        self.draw(&area)
    }
}

/// The chart of one workload's rows.
pub fn chart_for(res: &Results, workload: &str) -> Chart {
    let rows: Vec<&Row> = res.rows_of(workload).collect();
    let mut targets: Vec<&str> = Vec::new();
    for r in &rows {
        if !targets.contains(&r.target.as_str()) {
            targets.push(&r.target);
        }
    }
    if workload == "lockref-recovery" {
        let series = targets
            .iter()
            .filter_map(|t| {
                let r = rows.iter().find(|r| r.target == *t)?;
                let iv = r.params.get("intervals")?.as_array()?;
                let pts = iv
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| Some((i as f64 + 1.0, v.as_f64()?)))
                    .collect();
                Some((t.to_string(), pts))
            })
            .collect();
        return Chart {
            title: "lockref-recovery: stat rate while disturbed".into(),
            x_desc: "interval".into(),
            y_desc: "stat ops/s ÷ undisturbed ops/s".into(),
            series,
            log_ok: false,
            si_labels: false,
        };
    }
    let phased = rows.iter().any(|r| !r.phase().is_empty());
    // Multi-phase workloads plot one phase: readdir-large its readdir
    // phase, others (anon-churn's kinds) their first.
    let plotted = if rows.iter().any(|r| r.phase() == "readdir") {
        "readdir"
    } else {
        rows.first().map_or("", |r| r.phase())
    };
    let series = targets
        .iter()
        .map(|t| {
            let mut pts: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.target == *t && (!phased || r.phase() == plotted))
                .map(|r| (r.threads as f64, r.ops_per_sec))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            (t.to_string(), pts)
        })
        .filter(|(_, p)| !p.is_empty())
        .collect();
    Chart {
        title: if phased {
            format!("{workload} ({plotted} phase)")
        } else {
            workload.to_string()
        },
        x_desc: "threads".into(),
        y_desc: if plotted == "readdir" {
            "dirents/s"
        } else {
            "ops/s"
        }
        .into(),
        series,
        log_ok: true,
        si_labels: true,
    }
}

/// Writes `<base>.svg` and `<base>.png` for one workload.
pub fn plot_workload(res: &Results, workload: &str, base: &Path) -> Result<(), String> {
    chart_for(res, workload).write(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(ys: &[f64]) -> Chart {
        Chart {
            title: "t".into(),
            x_desc: "x".into(),
            y_desc: "y".into(),
            series: vec![(
                "vfscale".into(),
                ys.iter()
                    .enumerate()
                    .map(|(i, &y)| (i as f64 + 1.0, y))
                    .collect(),
            )],
            log_ok: true,
            si_labels: true,
        }
    }

    #[test]
    fn log_scale_only_when_the_spread_needs_it() {
        assert!(!chart(&[1e6, 2e6]).log_y());
        assert!(chart(&[1e5, 1e7]).log_y());
    }

    #[test]
    fn writes_svg_and_png_with_text() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("w");
        chart(&[1e5, 1e7]).write(&base).unwrap();
        let svg = std::fs::read_to_string(base.with_extension("svg")).unwrap();
        assert!(
            svg.contains("<svg") && svg.contains("vfscale"),
            "legend text is in the SVG"
        );
        let png = std::fs::read(base.with_extension("png")).unwrap();
        assert_eq!(&png[1..4], b"PNG");
    }
}
