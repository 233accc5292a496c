//! Human-readable output: one table per workload (terminal or Markdown), and
//! the `--report DIR` bundle: results.json, report.md (tables plus machine
//! details) and one SVG and PNG plot per workload.
//!
//! Table columns: target, threads, [phase], ops/s, ops/s per thread, ns/op
//! (per thread), scaling efficiency, [range over repeats], [bytes/file],
//! [min interval ratio], and "vfscale ×": vfscale's ops/s at the same
//! threads and phase divided by the row's. Targets that did not run show
//! "n/a: reason" or "FAILED: error" instead of numbers.

use crate::results::{Results, Row};
use comfy_table::{presets, Cell, CellAlignment, ContentArrangement, Table};
use std::path::Path;

pub mod plot;

/// Engineering notation: 12.3 M, 456 k, 7.89.
pub fn si(v: f64) -> String {
    let (d, unit) = match v.abs() {
        x if x >= 1e9 => (1e9, " G"),
        x if x >= 1e6 => (1e6, " M"),
        x if x >= 1e3 => (1e3, " k"),
        _ => (1.0, ""),
    };
    let x = v / d;
    let digits = if x.abs() >= 100.0 {
        0
    } else if x.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{x:.digits$}{unit}")
}

fn vfscale_rate(res: &Results, r: &Row) -> Option<f64> {
    res.results
        .iter()
        .find(|v| {
            v.target == "vfscale"
                && v.workload == r.workload
                && v.threads == r.threads
                && v.phase() == r.phase()
        })
        .map(|v| v.ops_per_sec)
}

/// The table of one workload; `markdown` picks the preset.
pub fn table(res: &Results, workload: &str, markdown: bool) -> Table {
    let rows: Vec<&Row> = res.rows_of(workload).collect();
    let has_phase = rows.iter().any(|r| !r.phase().is_empty());
    let has_range = rows.iter().any(|r| r.runs > 1);
    let has_bytes = rows.iter().any(|r| r.param_f64("bytes_per_file").is_some());
    let has_ratio = rows
        .iter()
        .any(|r| r.param_f64("min_interval_ratio").is_some());

    let mut header = vec!["target", "threads"];
    if has_phase {
        header.push("phase");
    }
    header.extend(["ops/s", "ops/s/thread", "ns/op", "efficiency"]);
    if has_range {
        header.push("ops/s min..max");
    }
    if has_bytes {
        header.push("bytes/file");
    }
    if has_ratio {
        header.extend(["min interval ratio", "undisturbed ops/s"]);
    }
    header.push("vfscale ×");
    let missing: Vec<(&str, String)> = res
        .unsupported
        .iter()
        .filter(|n| n.workload == workload)
        .map(|n| (n.target.as_str(), format!("n/a: {}", n.reason)))
        .chain(
            res.failed
                .iter()
                .filter(|f| f.workload == workload)
                .map(|f| (f.target.as_str(), format!("FAILED: {}", f.error))),
        )
        .collect();
    if !missing.is_empty() {
        header.push("note");
    }

    let width = header.len();
    let mut t = Table::new();
    t.load_style(if markdown {
        presets::ASCII_MARKDOWN
    } else {
        presets::UTF8_FULL_CONDENSED
    });
    t.set_content_arrangement(ContentArrangement::Disabled);
    t.set_header(header.iter().map(Cell::new));
    for r in &rows {
        let mut c = vec![r.target.clone(), r.threads.to_string()];
        if has_phase {
            c.push(r.phase().to_string());
        }
        c.push(si(r.ops_per_sec));
        c.push(si(r.ops_per_sec / r.threads as f64));
        c.push(format!("{:.1}", r.ns_per_op));
        c.push(r.efficiency.map_or("-".into(), |e| format!("{e:.2}")));
        if has_range {
            c.push(format!(
                "{}..{}",
                si(r.ops_per_sec_min),
                si(r.ops_per_sec_max)
            ));
        }
        if has_bytes {
            c.push(
                r.param_f64("bytes_per_file")
                    .map_or(String::new(), |b| format!("{b:.0}")),
            );
        }
        if has_ratio {
            c.push(
                r.param_f64("min_interval_ratio")
                    .map_or(String::new(), |x| format!("{x:.2}")),
            );
            c.push(
                r.param_f64("undisturbed_ops_per_sec")
                    .map_or(String::new(), si),
            );
        }
        c.push(if r.target == "vfscale" {
            "-".into()
        } else {
            vfscale_rate(res, r).map_or("-".into(), |v| format!("{:.2}×", v / r.ops_per_sec))
        });
        if !missing.is_empty() {
            c.push(String::new());
        }
        t.add_row(c);
    }
    let has_note = !missing.is_empty();
    for (target, what) in missing {
        let mut c = vec![target.to_string()];
        c.extend((1..width - 1).map(|_| "-".to_string()));
        c.push(what);
        t.add_row(c);
    }
    for (i, col) in t.column_iter_mut().enumerate() {
        if i >= 1 && !(has_note && i + 1 == width) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// The Markdown report: machine, configuration, then per workload its
/// description, table and plot.
pub fn markdown(res: &Results) -> String {
    let m = &res.machine;
    let c = &res.config;
    let mut s = String::new();
    s.push_str("# vfscale bench report\n\n");
    s.push_str("## Machine\n\n");
    s.push_str(&format!(
        "- CPU: {} ({} cores usable)\n",
        m.cpu_model, m.cpus
    ));
    s.push_str(&format!("- kernel: {}\n", m.kernel));
    s.push_str(&format!("- date: {}\n", m.date));
    s.push_str(&format!("- vfscale revision: {}\n", m.git_rev));
    if let Some(k) = &m.kernel_dir {
        s.push_str(&format!("- kernel target directory: {k}\n"));
    }
    if let Some(p) = m.placement() {
        s.push_str(&format!("- {p}\n"));
    }
    s.push_str("\n## Configuration\n\n");
    s.push_str(&format!(
        "- threads: {:?}; {} s per point after {} s warm-up; repeat {}{}\n",
        c.threads,
        c.duration_secs,
        c.warmup_secs,
        c.repeat,
        if c.repeat > 1 {
            " (rows are the median run)"
        } else {
            ""
        }
    ));
    s.push_str(&format!("- readdir-large entries: {}\n", c.entries));
    s.push_str(&format!("- targets: {}\n", c.targets.join(", ")));
    s.push_str(
        "- ns/op is per thread (threads / ops/s); efficiency = ops/s at N / (N × ops/s at 1); \
         vfscale × = vfscale ops/s / the row's ops/s at the same threads\n",
    );
    for w in &c.workloads {
        s.push_str(&format!("\n## {w}\n\n"));
        if let Some(wl) = crate::workload::by_name(w) {
            s.push_str(&format!("{}.\n\n", wl.about()));
        }
        s.push_str(&table(res, w, true).to_string());
        s.push('\n');
        if res.rows_of(w).next().is_some() {
            s.push_str(&format!("\n![{w}]({w}.svg)\n"));
        }
    }
    if !res.failed.is_empty() {
        s.push_str("\n## Failures\n\n");
        for f in &res.failed {
            s.push_str(&format!("- {} on {}: {}\n", f.workload, f.target, f.error));
        }
    }
    s
}

/// Writes results.json, report.md and the plots into `dir` (created).
pub fn write_report(res: &Results, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let write = |name: &str, text: String| {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))
    };
    write("results.json", res.to_json())?;
    write("report.md", markdown(res))?;
    for w in &res.config.workloads {
        if res.rows_of(w).next().is_some() {
            plot::plot_workload(res, w, &dir.join(w))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_formatting() {
        assert_eq!(si(12_345_678.0), "12.3 M");
        assert_eq!(si(456_000.0), "456 k");
        assert_eq!(si(7.891), "7.89");
        assert_eq!(si(2.5e9), "2.50 G");
    }
}
