//! One naming rule for every view that writes names: the
//! `header.cdl`, `nzfs cdl` and the virtual `.nc`.
//!
//! Zarr allows almost any Unicode string as a node, attribute or dimension
//! name; netCDF and CDL do not. A store name becomes:
//! - a **netCDF name** ([`netcdf`]), valid under netCDF-C's `NC_check_name`
//!   and readable by ncgen once escaped: UTF-8 in NFC; control characters,
//!   line and paragraph separators, `/` and `?` become `_`; a first
//!   character that is ASCII but not a letter, digit or `_` gets a `_` in
//!   front (`%x` -> `_%x`, ` lead` -> `_ lead`); trailing spaces become
//!   `_`; words ncgen reads as keywords wherever a name may stand (`int`,
//!   `NaN`, `data`, `_`, and special attribute names such as `_Storage`)
//!   get a `_` after them; the empty name is
//!   `_nz_empty`; at most [`MAX_NAME`] (241) bytes, cut at a character;
//! - a **CDL name** ([`cdl`]): that netCDF name with ncgen's special
//!   characters escaped by `\` (a leading digit too);
//! - a **file name** ([`in_file`]), for the virtual `.nc`: the netCDF name
//!   without the keyword suffix, since netCDF-C reads and writes `data`,
//!   `variables` or `group` as names; only ncgen's lexer does not.
//!
//! An attribute named like one of ncgen's special attributes is renamed
//! where ncgen would refuse it ([`attribute_names`]: any of them on a
//! group, any but `_FillValue` on a variable).
//!
//! Names that clean to the same name in one scope (the variables and groups
//! of a group, the attributes of one owner, the dimensions of a group) are
//! told apart by [`unique`]: the first keeps the name, later ones get
//! `_nz2`, `_nz3`, ... Where a name changed, the views keep the original:
//! `_nz_name` on a renamed variable or group, `_nz_renamed_attributes` and
//! `_nz_renamed_dimensions` (`new = "original"` for each, joined by `; `)
//! on the owner.
//!
//! Text that is not a name is escaped by [`quote`] (a CDL string) or
//! [`comment`] (inside a `//` comment: one line, whatever the text holds).
//! No store text can change the structure of a CDL document: every path
//! from a store string into the CDL goes through one of these four.

use std::collections::HashSet;
use std::fmt::Write;

use unicode_normalization::UnicodeNormalization;

/// The longest name, in bytes: netCDF-C's `NC_MAX_NAME` (256) less the 15
/// bytes of `_nc4_non_coord_`, which netCDF-4 puts before the name of a
/// variable named like a dimension it does not index (ncgen fails past it).
pub const MAX_NAME: usize = 256 - 15;

/// Words ncgen reads as keywords, or as values, wherever a name may stand;
/// a name spelled like one gets a trailing `_` (`int64` -> `int64_`). The
/// section words (`data`, `variables`, ...) are read as such at the start
/// of a line, where a variable's attributes are written (`data:units`).
const RESERVED: &[&str] = &[
    "char",
    "byte",
    "short",
    "int",
    "long",
    "float",
    "real",
    "double",
    "ubyte",
    "ushort",
    "uint",
    "int64",
    "uint64",
    "string",
    "enum",
    "opaque",
    "compound",
    "unlimited",
    "UNLIMITED",
    "integer",
    "ulong",
    "netcdf",
    "NaN",
    "NaNf",
    "nan",
    "nanf",
    "Infinity",
    "Infinityf",
    "infinity",
    "infinityf",
    "inf",
    "inff",
    "data",
    "variables",
    "dimensions",
    "group",
    "types",
    "_",
];

/// Whether `c` becomes `_` in a name: control characters, Unicode line and
/// paragraph separators, `/` (netCDF's group separator) and `?` (ncgen
/// reads it in no spelling).
fn replaced(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '/' | '?')
}

/// ncgen's special attribute names that its lexer reads as tokens
/// wherever they stand (netCDF-C's `ncgen.l`): a variable, dimension or
/// group of such a name gets a trailing `_` as keywords do (found
/// by tests/names.rs). As attribute names, [`attribute_names`]
/// decides.
const SPECIAL_TOKENS: &[&str] = &[
    "_FillValue",
    "_Format",
    "_Storage",
    "_ChunkSizes",
    "_Fletcher32",
    "_DeflateLevel",
    "_Shuffle",
    "_Endianness",
    "_NoFill",
    "_NCProperties",
    "_IsNetcdf4",
    "_SuperblockVersion",
    "_Filter",
    "_Codecs",
    "_QuantizeGranularBitRoundNumberOfSignificantDigits",
];

/// The netCDF name of store name `s` (module doc).
pub fn netcdf(s: &str) -> String {
    clean(s, true)
}

/// The name a netCDF file (the virtual `.nc`) gives store name `original`,
/// which the CDL views show as `shown` (from [`netcdf`], [`unique`] or
/// [`attribute_names`]): the same, except where the only change was the
/// trailing `_` of an ncgen keyword (`data`, `variables`, `_`, ...), which
/// netCDF-C's `NC_check_name` accepts and only ncgen's lexer trips on. For
/// an `attribute`, ncgen's special attribute names keep their `_` (they
/// mean something to netCDF). A keyword is never a shown name, so the name
/// given back is free in its scope.
pub fn in_file(original: &str, shown: &str, attribute: bool) -> String {
    let plain = clean_as(original, !attribute, false);
    // The name with the suffix differs from the plain one only for a keyword.
    if shown != plain && shown == clean(original, !attribute) {
        plain
    } else {
        shown.to_string()
    }
}

/// Like [`netcdf`], for an attribute: ncgen's special names are left to
/// [`attribute_names`].
fn netcdf_attribute(s: &str) -> String {
    clean(s, false)
}

fn clean(s: &str, tokens: bool) -> String {
    clean_as(s, tokens, true)
}

/// [`clean`], with ncgen's keywords suffixed only when `keywords`.
fn clean_as(s: &str, tokens: bool, keywords: bool) -> String {
    let keep = |c: char| if replaced(c) { '_' } else { c };
    // ASCII text is its own normal form (the common case, and the cheap one).
    let mut out: String = if s.is_ascii() {
        s.chars().map(keep).collect()
    } else {
        s.nfc().map(keep).collect()
    };
    if out.is_empty() {
        return "_nz_empty".into();
    }
    if out.starts_with(|c: char| c.is_ascii() && !c.is_ascii_alphanumeric() && c != '_') {
        out.insert(0, '_');
    }
    if out.len() > MAX_NAME {
        out.truncate(cut(&out, MAX_NAME).len());
    }
    // No trailing space (NC_check_name), even after the cut.
    let kept = out.trim_end_matches(' ').len();
    let spaces = out.len() - kept;
    out.truncate(kept);
    out.extend(std::iter::repeat_n('_', spaces));
    if keywords && (RESERVED.contains(&out.as_str()) || (tokens && SPECIAL_TOKENS.contains(&out.as_str()))) {
        if out.len() == MAX_NAME {
            out.pop();
        }
        out.push('_');
    }
    out
}

/// A netCDF name (from [`netcdf`]) as CDL writes it: ncgen's special
/// characters escaped with `\`, and a leading digit.
pub fn cdl(nc: &str) -> String {
    let mut out = String::with_capacity(nc.len() + 4);
    for (i, c) in nc.chars().enumerate() {
        let escape = (i == 0 && c.is_ascii_digit()) || " !\"#$%&'()*,:;<=>[]^`{|}~\\".contains(c);
        if escape {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The CDL name of store name `s`: [`cdl`] of [`netcdf`].
pub fn cdl_name(s: &str) -> String {
    cdl(&netcdf(s))
}

/// The netCDF names of the store names of one scope, unique: the first of
/// several that clean to one name keeps it, the later ones get `_nz2`,
/// `_nz3`, ... (shortened to fit [`MAX_NAME`]), never a name another
/// member of the scope has.
pub fn unique<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    unique_avoiding(names.into_iter().map(|n| (n, false)), &[])
}

/// Attribute names ncgen refuses as a store's attribute beyond
/// [`SPECIAL_TOKENS`] (netCDF-C's `ncgen.l`): with those, ncgen refuses
/// each of them as a group attribute, and as a variable attribute unless
/// its value is what netCDF-4 means by it (`_Storage = "chunked"`).
const ATTRIBUTE_ONLY: &[&str] = &[
    "_QuantizeBitGroomNumberOfSignificantDigits",
    "_QuantizeBitRoundNumberOfSignificantBits",
    "_Netcdf4Dimid",
    "_nc3_strict",
    "_NCZARR_ATTR",
];

/// The netCDF names of a group's (`group`) or a variable's attributes, as
/// [`unique`] makes them, with ncgen's special attribute names renamed too
/// (a group attribute `_FillValue` made `header.cdl` fail in
/// ncgen), except a variable's `_FillValue`.
pub fn attribute_names<'a>(keys: impl IntoIterator<Item = &'a str>, group: bool) -> Vec<String> {
    let reserved: Vec<&str> = SPECIAL_TOKENS
        .iter()
        .chain(ATTRIBUTE_ONLY)
        .copied()
        .filter(|&k| group || k != "_FillValue")
        .collect();
    unique_with(keys.into_iter().map(|k| (k, true)), &reserved, netcdf_attribute)
}

/// Like [`unique`], but a name flagged `true` must not be one of `reserved`
/// either (a subgroup must not be named like a dimension of its group: in
/// netCDF-4 both are HDF5 objects of the group, and ncgen fails).
pub fn unique_avoiding<'a>(names: impl IntoIterator<Item = (&'a str, bool)>, reserved: &[&str]) -> Vec<String> {
    unique_with(names, reserved, netcdf)
}

/// Names compared pairwise rather than through sets.
const FEW_NAMES: usize = 16;

/// [`unique_avoiding`] with the names cleaned by `to_netcdf`.
fn unique_with<'a>(
    names: impl IntoIterator<Item = (&'a str, bool)>,
    reserved: &[&str],
    to_netcdf: fn(&str) -> String,
) -> Vec<String> {
    let (clean, flags): (Vec<String>, Vec<bool>) = names.into_iter().map(|(n, f)| (to_netcdf(n), f)).unzip();
    // A few names, none taken twice nor reserved, stay as they are: most
    // variables' attributes, checked without building sets.
    if clean.len() <= FEW_NAMES
        && clean
            .iter()
            .enumerate()
            .all(|(i, name)| !(clean[..i].contains(name) || flags[i] && reserved.contains(&name.as_str())))
    {
        return clean;
    }
    let mut taken: HashSet<&str> = HashSet::new();
    let all: HashSet<&str> = clean
        .iter()
        .map(String::as_str)
        .chain(reserved.iter().copied())
        .collect();
    let mut renamed: Vec<Option<String>> = vec![None; clean.len()];
    let mut extra: HashSet<String> = HashSet::new();
    for (i, name) in clean.iter().enumerate() {
        if !(flags[i] && reserved.contains(&name.as_str())) && taken.insert(name.as_str()) {
            continue;
        }
        let mut k = 2u64;
        loop {
            let candidate = with_suffix(name, &format!("_nz{k}"));
            if !all.contains(candidate.as_str()) && !extra.contains(&candidate) {
                extra.insert(candidate.clone());
                renamed[i] = Some(candidate);
                break;
            }
            k += 1;
        }
    }
    clean
        .iter()
        .zip(renamed)
        .map(|(c, r)| r.unwrap_or_else(|| c.clone()))
        .collect()
}

/// netCDF name `name` with `suffix` after it, `name` shortened so that the
/// suffix always fits [`MAX_NAME`] (a loop over suffixes always ends).
pub fn with_suffix(name: &str, suffix: &str) -> String {
    let base = cut(name, MAX_NAME.saturating_sub(suffix.len()));
    netcdf(&format!("{base}{suffix}"))
}

/// `s` cut to at most `max` bytes, at a character boundary: the one place
/// names and texts are shortened (netCDF names, node names past NAME_MAX,
/// long values in comments).
pub fn cut(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The `_nz_renamed_*` text of a scope: `new = "original"` for each name
/// that changed (the original as a CDL string), joined by `; `, or `None`.
pub fn renamed_lines<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Option<String> {
    let parts: Vec<String> = pairs
        .into_iter()
        .filter(|(original, new)| original != new)
        .map(|(original, new)| format!("{new} = {}", quote(original)))
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// A CDL string literal, escaped as ncdump escapes it.
pub fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() && (c as u32) < 0x100 => {
                let _ = write!(out, "\\{:03o}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `s` as text or an attribute value in XML or HTML (`index.html`, an
/// OME-TIFF's OME-XML): the five markup characters escaped, and control
/// characters and U+FFFE and U+FFFF, which XML 1.0 allows nowhere, as
/// U+FFFD.
pub fn markup(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Not an XML `Char`: controls and the two noncharacters.
            c if (c.is_control() && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{FFFE}' | '\u{FFFF}') => {
                out.push('\u{FFFD}')
            }
            c => out.push(c),
        }
    }
    out
}

/// `s` inside a `//` comment: on one line whatever it holds (control
/// characters and line separators as `\n`, `\u{...}` escapes).
pub fn comment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}') => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// `s` in a log line, a commit's message or `nzfs status`: on one line,
/// with [`comment`]'s escapes, so that a file or program name (any bytes
/// its writer chose) neither forges a line nor moves a terminal's cursor.
pub fn escaped(s: &str) -> String {
    comment(s)
}

/// `n` and `noun`, plural unless `n` is 1 (`1 chunk file`, `2 chunk
/// files`). `noun` takes an `s`.
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// XML 1.0's `Char` production (section 2.2), written from the spec.
    fn xml_char(c: char) -> bool {
        matches!(c as u32, 0x9 | 0xA | 0xD | 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
    }

    #[test]
    fn markup_holds_only_xml_characters() {
        let every: String = (0..=0x10FFFFu32).filter_map(char::from_u32).collect();
        let out = markup(&every);
        let bad: Vec<u32> = out.chars().filter(|&c| !xml_char(c)).map(|c| c as u32).collect();
        assert!(bad.is_empty(), "not XML characters: {bad:x?}");
        assert_eq!(markup("a\u{FFFE}b\u{FFFF}"), "a\u{FFFD}b\u{FFFD}");
    }

    #[test]
    fn netcdf_names_follow_nc_check_name_and_ncgen() {
        assert_eq!(netcdf("t2m"), "t2m");
        assert_eq!(netcdf("2m temp"), "2m temp");
        assert_eq!(netcdf("%x"), "_%x");
        assert_eq!(netcdf(" lead"), "_ lead");
        assert_eq!(netcdf("trail "), "trail_");
        assert_eq!(netcdf("a/b?c"), "a_b_c");
        assert_eq!(netcdf("a\nb\tc\u{2028}"), "a_b_c_");
        assert_eq!(netcdf("_"), "__");
        assert_eq!(netcdf("data"), "data_");
        assert_eq!(netcdf("int64"), "int64_");
        assert_eq!(netcdf(""), "_nz_empty");
        assert_eq!(netcdf("-x"), "_-x");
        assert_eq!(netcdf("é"), "é");
        // NFD becomes NFC.
        assert_eq!(netcdf("cafe\u{301}"), "caf\u{e9}");
        let long = netcdf(&"é".repeat(300));
        assert!(long.len() <= MAX_NAME && long.chars().all(|c| c == 'é'), "{long}");
        assert_eq!(
            netcdf(&format!("{} ", "x".repeat(MAX_NAME - 1))),
            format!("{}_", "x".repeat(MAX_NAME - 1))
        );
    }

    #[test]
    fn cdl_names_escape_what_ncgen_needs() {
        assert_eq!(cdl_name("2m temp"), "\\2m\\ temp");
        assert_eq!(cdl_name("a:b(c)"), "a\\:b\\(c\\)");
        assert_eq!(cdl_name("a-b.c+d@e"), "a-b.c+d@e");
        assert_eq!(cdl_name("a\\b"), "a\\\\b");
        assert_eq!(cdl_name("%x"), "_\\%x");
    }

    #[test]
    fn collisions_get_a_suffix_that_collides_with_nothing() {
        assert_eq!(unique(["a\nb", "a\tb", "a_b_nz2"]), ["a_b", "a_b_nz3", "a_b_nz2"]);
        assert_eq!(unique(["café", "cafe\u{301}"]), ["café", "café_nz2"]);
        assert_eq!(
            unique_avoiding([("x", true), ("x", false), ("y", false)], &["x"]),
            ["x_nz2", "x", "y"]
        );
        let long = "x".repeat(300);
        let u = unique([long.as_str(), long.as_str(), long.as_str()]);
        assert!(
            u[0] != u[1] && u[1] != u[2] && u.iter().all(|n| n.len() <= MAX_NAME),
            "{u:?}"
        );
        assert!(with_suffix(&"x".repeat(MAX_NAME), "_nz2").ends_with("_nz2"));
    }

    #[test]
    fn comments_stay_on_one_line() {
        let hostile = "t\n\t\tv:injected = \"x\" ;\n\t\t//\u{2028}\r";
        let c = comment(hostile);
        assert!(!c.contains(['\n', '\r', '\u{2028}']), "{c}");
        assert_eq!(comment("a\u{1}b"), "a\\u{1}b");
    }
}
