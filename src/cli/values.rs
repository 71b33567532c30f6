//! The values of `nzfs mount`'s options that are words or durations
//! (`--missing-chunks`, `--nc-format`, `--metadata-ttl`, `--commit`,
//! `--passthrough`), each with what it becomes in the library.

use clap::ValueEnum;

use crate::array::MissingChunks;

/// `--missing-chunks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MissingChunksArg {
    /// The array's fill value, as the Zarr spec says
    Fill,
    /// EIO, to tell lost data from fill
    Error,
}

/// `--nc-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NcFormatArg {
    /// CDF-2, or CDF-5 where 64-bit integers need it
    Auto,
    /// CDF-2 always; what needs CDF-5 is left out, saying why
    Cdf2,
}

impl From<NcFormatArg> for crate::netcdf::NcFormat {
    fn from(f: NcFormatArg) -> Self {
        match f {
            NcFormatArg::Auto => crate::netcdf::NcFormat::Auto,
            NcFormatArg::Cdf2 => crate::netcdf::NcFormat::Cdf2,
        }
    }
}

impl From<MissingChunksArg> for MissingChunks {
    fn from(m: MissingChunksArg) -> Self {
        match m {
            MissingChunksArg::Fill => MissingChunks::Fill,
            MissingChunksArg::Error => MissingChunks::Error,
        }
    }
}

/// `--metadata-ttl`: how often a mount looks at its store's metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataTtl {
    /// Never: what was read at the mount is served until the unmount.
    Never,
    /// Every so many seconds (at least 1).
    Every(u32),
}

/// Why a `--metadata-ttl` value is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataTtlError {
    /// Zero seconds.
    #[error("0 would look at the store at every request; give 1 or more seconds, or never")]
    Zero,
    /// Neither a number nor `never` (the value given).
    #[error("`{0}` is neither a number of seconds (e.g. 60) nor `never`")]
    NotANumber(String),
}

impl std::str::FromStr for MetadataTtl {
    type Err = MetadataTtlError;
    fn from_str(s: &str) -> Result<Self, MetadataTtlError> {
        match s.trim_end_matches('s') {
            "never" | "off" => Ok(MetadataTtl::Never),
            n => match n.parse::<u32>() {
                Ok(0) => Err(MetadataTtlError::Zero),
                Ok(secs) => Ok(MetadataTtl::Every(secs)),
                Err(_) => Err(MetadataTtlError::NotANumber(s.to_string())),
            },
        }
    }
}

impl std::fmt::Display for MetadataTtl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetadataTtl::Never => f.write_str("never"),
            MetadataTtl::Every(secs) => write!(f, "{secs}"),
        }
    }
}

/// `--commit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CommitArg {
    /// Each new NAME.nc, and each write into an array's file, at its close (and fsync), one commit each
    Close,
    /// Every new NAME.nc and write into an array's file held until `nzfs commit`, then one commit
    Explicit,
}

/// `--passthrough`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PassthroughArg {
    /// When available; the log says which path is in use
    Auto,
    /// Or the mount fails
    Always,
    /// Every read through the daemon
    Never,
}

impl From<PassthroughArg> for crate::fuse::Passthrough {
    fn from(m: PassthroughArg) -> Self {
        match m {
            PassthroughArg::Auto => crate::fuse::Passthrough::Auto,
            PassthroughArg::Always => crate::fuse::Passthrough::Always,
            PassthroughArg::Never => crate::fuse::Passthrough::Never,
        }
    }
}
