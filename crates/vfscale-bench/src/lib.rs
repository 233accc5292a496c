//! vfscale-bench: the seed workloads (DESIGN §5) against several targets,
//! measured the same way, reported as tables, JSON and plots.
//!
//! Layers, each a module:
//! - `target`: the `Target` trait of primitive operations and its
//!   implementations (vfscale and any `ProcessApi` through one generic
//!   adapter, the host kernel, the peer crates);
//! - `workload`: one module per workload, generic over `Target`;
//! - `harness`: the measuring loop (pinned threads, barrier start, warm-up,
//!   shared stop flag, intervals, a background disturber);
//! - `suite`: workloads × targets × repeats, progress bars;
//! - `results`: rows, medians of repeats, efficiency, the JSON schema;
//! - `report`: tables, report.md, SVG/PNG plots;
//! - `cli`: the `vfscale bench` arguments and entry point;
//! - `sys`: CPUs, pinning, RSS, machine facts;
//! - `cold_lookup`: `vfscale cold-lookup`, stat through the passthrough
//!   backend against the kernel on one host directory (outside the suite).

pub mod cli;
pub mod cold_lookup;
pub mod harness;
pub mod report;
pub mod results;
pub mod suite;
pub mod sys;
pub mod target;
pub mod workload;

pub use cli::BenchArgs;
pub use results::{Results, Row};
pub use suite::Config;
pub use target::{Op, OpError, OpResult, Target, TargetId};
pub use workload::{Ctx, Workload};
