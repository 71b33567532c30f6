//! Sizes on the command line (`--cache-size`, `--disk-cache-size`):
//! `KiB`/`MiB`/`GiB`/`TiB` and the bare `K`/`M`/`G`/`T` are binary (as `dd`
//! and `du` read them), `kB`/`MB`/`GB`/`TB` decimal, as SI says; a bare
//! number is bytes.

/// Why a size was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// Not a number with an optional unit.
    #[error("{0:?} is not a size like 512MiB or 2GiB")]
    NotASize(String),
    /// A number with a unit nzfs does not know.
    #[error("unknown size unit {unit:?} in {text:?} (use KiB, MiB, GiB, TiB, or kB, MB, GB, TB for powers of 10)")]
    UnknownUnit {
        /// The unit.
        unit: String,
        /// The whole size given.
        text: String,
    },
    /// A unit of bits (`Gb`, `Mb`, `kb`).
    #[error("{0:?}: a lower-case b is bits; give bytes: GiB, MiB, KiB (powers of 2) or GB, MB, kB (powers of 10)")]
    Bits(String),
    /// More bytes than 64 bits hold.
    #[error("{0:?} is out of range")]
    OutOfRange(String),
}

/// Parse `512MiB`, `2GiB`, `100M`, `1.5G`, `4096`, `1GB` into bytes.
pub fn parse_size(s: &str) -> Result<u64, SizeError> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| SizeError::NotASize(s.to_string()))?;
    // A lower-case b after a prefix is bits (1Gb, a gigabit): refused
    // rather than read as bytes.
    if matches!(unit.trim(), "kb" | "Kb" | "mb" | "Mb" | "gb" | "Gb" | "tb" | "Tb") {
        return Err(SizeError::Bits(s.to_string()));
    }
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        other => {
            return Err(SizeError::UnknownUnit {
                unit: other.to_string(),
                text: s.to_string(),
            });
        }
    };
    let bytes = n * mult as f64;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(SizeError::OutOfRange(s.to_string()));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("1.5g"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        // SI units are SI, binary ones binary.
        assert_eq!(parse_size("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_size("500MB"), Ok(500_000_000));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("1XB").unwrap_err().to_string().contains("GB"));
        assert!(matches!(parse_size("lots"), Err(SizeError::NotASize(_))));
        assert!(matches!(parse_size("5 parsecs"), Err(SizeError::UnknownUnit { .. })));
        assert!(matches!(parse_size("0"), Err(SizeError::OutOfRange(_))));
        // Bits are refused, bytes taken.
        for bits in ["1Gb", "512Mb", "4kb", "1gb"] {
            assert!(matches!(parse_size(bits), Err(SizeError::Bits(_))), "{bits}");
        }
        assert_eq!(parse_size("100b"), Ok(100));
        assert_eq!(parse_size("1gib"), Ok(1 << 30));
    }
}
