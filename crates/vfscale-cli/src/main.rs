//! The `vfscale` binary: one subcommand per tool (bench now; mount and
//! stats later), each implemented in its own crate.

use clap::{Parser, Subcommand};

/// Every target in the bench shares this allocator (see Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "vfscale",
    version,
    about = "A user-space VFS core that scales with cores"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the benchmark suite: seed workloads × targets × thread counts.
    Bench(vfscale_bench::BenchArgs),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Bench(args) => vfscale_bench::cli::main(&args),
    }
}
