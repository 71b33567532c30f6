//! The `nzfs` binary: parse the command line, set up logging, run, and map
//! failures to a one-line message and a non-zero exit code.

use std::path::Path;
use std::process::ExitCode;

use nzfs::cli::{CheckArgs, Cli, Command, MountArgs};
use nzfs::daemon::{self, CliError};
use nzfs::store::Redacting;

fn init_logging(verbose: u8, log_file: Option<&Path>) -> Result<(), CliError> {
    let default = match verbose {
        0 => "nzfs=info",
        1 => "nzfs=debug",
        _ => "nzfs=trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    // Every log line is redacted: an error from a back end may quote the
    // URL it asked, with its user info or signature.
    match log_file {
        Some(path) => {
            let log = daemon::RotatingLog::open(path)
                .map_err(|e| CliError::new(format!("log file {}: {e}", path.display())))?;
            // The log lives as long as the process.
            let log: &'static daemon::RotatingLog = Box::leak(Box::new(log));
            builder.with_ansi(false).with_writer(move || Redacting(log)).init();
        }
        // Colour only on a terminal.
        None => {
            use std::io::IsTerminal;
            builder
                .with_ansi(std::io::stderr().is_terminal())
                .with_writer(|| Redacting(std::io::stderr()))
                .init()
        }
    }
    Ok(())
}

fn mount(args: &MountArgs) -> Result<(), CliError> {
    if args.daemon_child {
        // The parent checked the command line; the settings come whole on
        // stdin (the child's own arguments only name the mount for `ps`).
        let config = daemon::MountConfig::from_stdin()?;
        init_logging(config.verbose, config.log_file.as_deref())?;
        return daemon::serve(&config, daemon::Serving::DaemonChild);
    }
    let config = daemon::MountConfig::from_args(args)?;
    if args.foreground {
        init_logging(args.verbose, None)?;
        return daemon::serve(&config, daemon::Serving::Foreground);
    }
    let log_file = match &args.log_file {
        Some(path) => path.clone(),
        None => daemon::default_log_file(&args.mountpoint)?,
    };
    daemon::mount_background(config, &log_file)
}

/// `nzfs check`: exit 0 conforms, 1 violates or declares no NZ-1.0, 2
/// cannot be opened.
fn check(args: &CheckArgs) -> ExitCode {
    let dataset = match args
        .symlinks
        .source(&args.store)
        .and_then(|s| Ok(daemon::open_dataset(&s, 256 << 20)?))
    {
        Ok(d) => d,
        Err(e) => {
            eprintln!("nzfs: {}", nzfs::store::redact_text(&e.message));
            return ExitCode::from(2);
        }
    };
    // SAFETY: isatty only inspects the descriptor.
    let tty = unsafe { libc::isatty(2) } == 1;
    let mut progress = |done: usize, total: usize| {
        if tty || total >= 100 {
            eprint!("\rnzfs check: reading coordinate values {done}/{total}");
            if done == total {
                eprintln!();
            }
        }
    };
    let scope = nzfs::nz::Scope {
        read_values: !args.no_values,
        ..nzfs::nz::Scope::FULL
    };
    let report = nzfs::nz::check(&dataset, scope, &mut progress);
    if args.json {
        println!(
            "{}",
            nzfs::nz::to_json(&daemon::shown_store(&args.store).to_string(), &report)
        );
    } else {
        print!("{}", nzfs::nz::to_text(&report));
        if report.declared() {
            println!(
                "{} (Zarr v{}): {} NZ-1.0 ({}, {})",
                daemon::shown_store(&args.store),
                report.zarr_format,
                if report.errors() == 0 {
                    "conforms to"
                } else {
                    "does not conform to"
                },
                nzfs::naming::count(report.errors() as u64, "error"),
                nzfs::naming::count(report.warnings() as u64, "warning")
            );
        } else {
            // Plain Zarr (an xarray store, CF or not) is not in error: the
            // findings say what declaring NZ-1.0 would need.
            let invalid = report.failures();
            let others = (report.errors() + report.warnings()).saturating_sub(1 + invalid);
            println!(
                "{} (Zarr v{}) does not declare NZ-1.0 (the NetCDF-Zarr convention: Zarr with netCDF's data \
                 model, which nzfs's netCDF views follow), so it is read as plain Zarr{}. Declaring it takes \
                 the root attribute conventions = \"NZ-1.0\"{}.",
                daemon::shown_store(&args.store),
                report.zarr_format,
                match invalid {
                    0 => String::new(),
                    n => format!(
                        " ({} not valid Zarr: the errors above)",
                        nzfs::naming::count(n as u64, "node")
                    ),
                },
                match others {
                    0 => String::new(),
                    n => format!(
                        ", and what the {} above say",
                        nzfs::naming::count(n as u64, "other note")
                    ),
                },
            );
        }
    }
    // 0 is "conforms": a store that does not declare NZ-1.0 does not (its
    // note is calm, but a script gating on the status must not pass it).
    if report.failures() > 0 || !report.declared() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Check(_) => unreachable!("handled in main"),
        Command::Mount(mut args) => {
            daemon::store_from_environment(&mut args);
            args.absolutize();
            mount(&args)
        }
        Command::Unmount(args) => nzfs::admin::unmount(&args.mountpoint, args.lazy),
        Command::Commit(args) => nzfs::admin::commit(&args.mountpoint, args.message.as_deref().unwrap_or("")),
        Command::Discard(args) => nzfs::admin::discard(&args.mountpoint),
        Command::Status(args) => match &args.mountpoint {
            Some(mp) => nzfs::admin::status(mp, args.json),
            None => nzfs::admin::list_mounts(args.json),
        },
        Command::Man(args) => nzfs::admin::write_man_pages(&args.dir),
        Command::InstallHelper(args) => nzfs::admin::install_helper(&args.prefix, args.remove),
        #[cfg(feature = "csi")]
        Command::Csi(args) => {
            init_logging(0, None)?;
            nzfs::csi::serve(args)
        }
        Command::Completions(args) => {
            nzfs::admin::print_completions(args.shell);
            Ok(())
        }
        Command::Cdl(args) => {
            let opened = daemon::open(&args.symlinks.source(&args.store)?)?;
            let h = &opened.hierarchy;
            let path = args.node_path.as_deref().unwrap_or("").trim_matches('/');
            let id = h.nodes.iter().position(|n| n.path == path).ok_or_else(|| {
                let mut there: Vec<&str> = h
                    .nodes
                    .iter()
                    .map(|n| n.path.as_str())
                    .filter(|p| !p.is_empty())
                    .collect();
                let more = there.len().saturating_sub(20);
                there.truncate(20);
                CliError::new(format!(
                    "no group or array {path:?} in {}; it holds: {}{}",
                    opened.shown,
                    match there.is_empty() {
                        true => "no node but its root".to_string(),
                        false => there.join(", "),
                    },
                    match more {
                        0 => String::new(),
                        n => format!(
                            " and {n} more (nzfs cdl {} lists them all)",
                            daemon::shown_store(&args.store)
                        ),
                    }
                ))
            })?;
            let dataset = daemon::dataset_name(&args.store);
            let version = nzfs::cdl::VersionRoot::of(&opened.versions, path);
            let text = nzfs::cdl::render(h, id, nzfs::cdl::title(h, id, &dataset, version));
            print!("{}", nzfs::cdl::with_note(text, version));
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    // A misspelled subcommand gets the nearest one (clap suggests only
    // close spellings: not `mount` for `mnt`).
    if let Some(word) = std::env::args().nth(1)
        && let Some(near) = nzfs::cli::misspelled_command(&word)
    {
        eprintln!("nzfs: unknown command `{word}`; did you mean `{near}`? (nzfs --help lists the commands)");
        return ExitCode::from(2);
    }
    // mount(8) runs `nzfs SOURCE MOUNTPOINT -o OPTIONS`: see normalize_args.
    // The help texts are this build's (cli/built.rs).
    let matches = nzfs::cli::command().get_matches_from(nzfs::cli::normalize_args(std::env::args_os()));
    let cli = <Cli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // Commands that print end quietly on a closed pipe (`nzfs completions
    // bash | head -1`), as cat does: SIGPIPE's default action.
    // Not the mount daemon, which must outlive any reader that goes away,
    // nor the CSI plugin, whose clients may hang up (a kubelet's probe).
    #[cfg(feature = "csi")]
    let serves = matches!(cli.command, Command::Mount(_) | Command::Csi(_));
    #[cfg(not(feature = "csi"))]
    let serves = matches!(cli.command, Command::Mount(_));
    if !serves {
        // SAFETY: resetting a signal's disposition before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    if let Command::Check(args) = &cli.command {
        return check(args);
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nzfs: {}", nzfs::store::redact_text(&e.message));
            ExitCode::from(e.code)
        }
    }
}
