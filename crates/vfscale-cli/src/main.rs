//! The `vfscale` binary: one subcommand per tool (bench, mount, umount),
//! each implemented in its own crate.

mod alloc;
mod mount;

use clap::{Parser, Subcommand};

/// Every target in the bench shares this allocator (see alloc.rs).
#[global_allocator]
static ALLOCATOR: alloc::Alloc = alloc::Alloc;
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
    /// Mount a vfscale namespace on a directory through FUSE.
    Mount(mount::MountArgs),
    /// Unmount a vfscale mount.
    Umount(mount::UmountArgs),
    /// Stat a host directory's files through the passthrough backend, cold
    /// and hot, against the kernel (seed 003).
    ColdLookup(vfscale_bench::cold_lookup::ColdLookupArgs),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Bench(args) => vfscale_bench::cli::main(&args),
        Command::Mount(args) => mount::mount_main(&args),
        Command::Umount(args) => mount::umount_main(&args),
        Command::ColdLookup(args) => match vfscale_bench::cold_lookup::main(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("cold-lookup: {e}");
                ExitCode::FAILURE
            }
        },
    }
}
