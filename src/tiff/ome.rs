//! The OME-XML of an OME-Zarr multiscale image (schema 2016-06), which
//! an OME-TIFF carries in its first IFD's `ImageDescription`: Bio-Formats,
//! QuPath, Fiji and tifffile read the image's dimensions, pixel size and
//! channels from it.
//!
//! The image's axes map to OME's five: the last two are Y and X, and each
//! leading one is T (type `time`, or named `t`), C (`channel`, `c`) or Z
//! (`space`, `z`), each at most once. The pages of the file go in C order
//! of the leading axes, so `DimensionOrder` is `XY` followed by them from
//! the last to the first, then the absent ones (size 1). Pixel sizes come
//! from level 0's `scale` with the axes' units, and are left out where an
//! axis has no unit OME knows (its default, micrometres, would be a guess).
//!
//! Invariants: every text from the store is escaped for XML; an image
//! whose axes or data type OME cannot hold has no OME-XML, and the caller
//! shows no OME-TIFF for it.

use std::fmt::Write;

use crate::naming::markup;
use crate::zarr::data_type::DataType;
use crate::zarr::hierarchy::NgffImage;

/// Why an image has no OME-XML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unmapped {
    /// An axis that is none of T, C and Z, or one of them twice.
    Axis(String),
    /// A data type OME has no pixel type for (64-bit integers, halves,
    /// anything not a number).
    Type(String),
    /// Fewer than two axes, or level 0's shape is not one per axis.
    Shape,
}

impl std::fmt::Display for Unmapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unmapped::Axis(a) => write!(f, "axis {a:?} is not one of OME's T, C and Z (or is one twice)"),
            Unmapped::Type(t) => write!(f, "OME has no pixel type for {t}"),
            Unmapped::Shape => write!(f, "level 0 does not have one dimension per axis"),
        }
    }
}

/// The most `Channel` elements written for channels the metadata does not
/// name: a longer C axis gets none (so that the OME-XML of a fill-only
/// `[2^40, 1, 1]` image is a few hundred bytes, not terabytes).
pub const UNNAMED_CHANNELS: u64 = 4096;

/// The OME-XML of `image`, named `name`, whose level 0 has `shape` and
/// data type `dt`, stored as `pages` pages from IFD 0.
pub fn xml(image: &NgffImage, name: &str, shape: &[u64], dt: &DataType) -> Result<String, Unmapped> {
    let n = image.axes.len();
    if n < 2 || shape.len() != n {
        return Err(Unmapped::Shape);
    }
    let pixel_type = pixel_type(dt).ok_or_else(|| Unmapped::Type(dt.name()))?;
    let mut letters = Vec::with_capacity(n);
    for axis in &image.axes[..n - 2] {
        let letter = match (axis.kind.as_deref(), axis.name.to_ascii_lowercase().as_str()) {
            (Some("time"), _) | (None, "t") => 'T',
            (Some("channel"), _) | (None, "c") => 'C',
            (Some("space"), _) | (None, "z") => 'Z',
            _ => return Err(Unmapped::Axis(axis.name.clone())),
        };
        if letters.contains(&letter) {
            return Err(Unmapped::Axis(axis.name.clone()));
        }
        letters.push(letter);
    }
    letters.extend(['Y', 'X']);
    let size = |l: char| letters.iter().position(|&c| c == l).map_or(1, |i| shape[i]);
    let mut order: String = "XY".into();
    order.extend(letters[..n - 2].iter().rev());
    order.extend(['Z', 'C', 'T'].into_iter().filter(|l| !letters.contains(l)));
    let pages = shape[..n - 2]
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or(Unmapped::Shape)?;
    let bits = dt.size() * 8;
    let endian = cfg!(target_endian = "big");
    let mut pixels = format!(
        r#"<Pixels ID="Pixels:0" DimensionOrder="{order}" Type="{pixel_type}" SizeX="{}" SizeY="{}" SizeZ="{}" SizeC="{}" SizeT="{}" BigEndian="{endian}" Interleaved="false" SignificantBits="{bits}""#,
        size('X'),
        size('Y'),
        size('Z'),
        size('C'),
        size('T'),
    );
    for (i, &l) in letters.iter().enumerate() {
        let axis = &image.axes[i];
        let Some(value) = image.scale.as_ref().map(|s| s[i]).filter(|v| v.is_finite() && *v > 0.0) else {
            continue;
        };
        let unit = axis.unit.as_deref();
        match l {
            'X' | 'Y' | 'Z' => {
                if let Some(u) = unit.and_then(length_unit) {
                    let _ = write!(pixels, r#" PhysicalSize{l}="{value}" PhysicalSize{l}Unit="{u}""#);
                }
            }
            'T' => {
                if let Some(u) = unit.and_then(time_unit) {
                    let _ = write!(pixels, r#" TimeIncrement="{value}" TimeIncrementUnit="{u}""#);
                }
            }
            _ => {}
        }
    }
    pixels.push('>');
    let channels = size('C');
    let named = image.channels.len() as u64 == channels;
    // `Channel` is optional (readers take SizeC): one per channel is
    // written only while that stays bounded, by the metadata's own names
    // or by UNNAMED_CHANNELS, however long the C axis.
    let described = if named || channels <= UNNAMED_CHANNELS {
        channels
    } else {
        0
    };
    for c in 0..described {
        let _ = write!(pixels, r#"<Channel ID="Channel:0:{c}" SamplesPerPixel="1""#);
        if named {
            let ch = &image.channels[c as usize];
            if let Some(label) = &ch.label {
                let _ = write!(pixels, r#" Name="{}""#, markup(label));
            }
            if let Some(rgba) = ch.color.as_deref().and_then(color) {
                let _ = write!(pixels, r#" Color="{rgba}""#);
            }
        }
        pixels.push_str("/>");
    }
    let _ = write!(pixels, r#"<TiffData IFD="0" PlaneCount="{pages}"/></Pixels>"#);
    Ok(format!(
        concat!(
            r#"<?xml version="1.0" encoding="UTF-8"?>"#,
            r#"<OME xmlns="http://www.openmicroscopy.org/Schemas/OME/2016-06" "#,
            r#"xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" "#,
            r#"xsi:schemaLocation="http://www.openmicroscopy.org/Schemas/OME/2016-06 "#,
            r#"http://www.openmicroscopy.org/Schemas/OME/2016-06/ome.xsd" Creator="nzfs {}">"#,
            r#"<Image ID="Image:0" Name="{}">{}</Image></OME>"#
        ),
        env!("CARGO_PKG_VERSION"),
        markup(image.name.as_deref().unwrap_or(name)),
        pixels
    ))
}

/// OME's `PixelType` of a data type, as `data.bin` holds it.
fn pixel_type(dt: &DataType) -> Option<&'static str> {
    use DataType as D;
    Some(match dt {
        D::Bool | D::UInt8 => "uint8",
        D::Int8 => "int8",
        D::UInt16 => "uint16",
        D::Int16 => "int16",
        D::UInt32 => "uint32",
        D::Int32 => "int32",
        // bfloat16 is shown as float32 in data.bin.
        D::Float32 | D::BFloat16 => "float",
        D::Float64 => "double",
        _ => return None,
    })
}

/// OME's `UnitsLength` symbol of an NGFF (UDUNITS-2) length unit.
fn length_unit(unit: &str) -> Option<&'static str> {
    Some(match unit {
        "angstrom" => "Å",
        "attometer" => "am",
        "centimeter" => "cm",
        "decimeter" => "dm",
        "exameter" => "Em",
        "femtometer" => "fm",
        "foot" => "ft",
        "gigameter" => "Gm",
        "hectometer" => "hm",
        "inch" => "in",
        "kilometer" => "km",
        "megameter" => "Mm",
        "meter" => "m",
        "micrometer" => "µm",
        "mile" => "mi",
        "millimeter" => "mm",
        "nanometer" => "nm",
        "parsec" => "pc",
        "petameter" => "Pm",
        "picometer" => "pm",
        "terameter" => "Tm",
        "yard" => "yd",
        "yoctometer" => "ym",
        "yottameter" => "Ym",
        "zeptometer" => "zm",
        "zettameter" => "Zm",
        _ => return None,
    })
}

/// OME's `UnitsTime` symbol of an NGFF time unit.
fn time_unit(unit: &str) -> Option<&'static str> {
    Some(match unit {
        "attosecond" => "as",
        "centisecond" => "cs",
        "day" => "d",
        "decisecond" => "ds",
        "exasecond" => "Es",
        "femtosecond" => "fs",
        "gigasecond" => "Gs",
        "hectosecond" => "hs",
        "hour" => "h",
        "kilosecond" => "ks",
        "megasecond" => "Ms",
        "microsecond" => "µs",
        "millisecond" => "ms",
        "minute" => "min",
        "nanosecond" => "ns",
        "petasecond" => "Ps",
        "picosecond" => "ps",
        "second" => "s",
        "terasecond" => "Ts",
        "yoctosecond" => "ys",
        "yottasecond" => "Ys",
        "zeptosecond" => "zs",
        "zettasecond" => "Zs",
        _ => return None,
    })
}

/// OME's `Color` (a signed 32-bit RGBA) of an `omero` colour `RRGGBB`.
fn color(hex: &str) -> Option<i32> {
    if hex.len() != 6 {
        return None;
    }
    let rgb = u32::from_str_radix(hex, 16).ok()?;
    Some((rgb << 8 | 0xFF) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zarr::hierarchy::{Axis, Channel};

    fn axis(name: &str, kind: Option<&str>, unit: Option<&str>) -> Axis {
        Axis {
            name: name.into(),
            kind: kind.map(Into::into),
            unit: unit.map(Into::into),
        }
    }

    fn image(axes: Vec<Axis>, scale: Option<Vec<f64>>) -> NgffImage {
        NgffImage {
            name: None,
            axes,
            levels: vec![],
            scale,
            channels: vec![],
        }
    }

    #[test]
    fn pages_in_c_order_give_the_dimension_order_backwards() {
        let um = Some("micrometer");
        let img = image(
            vec![
                axis("c", Some("channel"), None),
                axis("z", Some("space"), um),
                axis("y", Some("space"), um),
                axis("x", Some("space"), um),
            ],
            Some(vec![1.0, 2.0, 0.5, 0.25]),
        );
        let x = xml(&img, "cells", &[2, 3, 32, 48], &DataType::UInt16).unwrap();
        assert!(
            x.contains(r#"DimensionOrder="XYZCT" Type="uint16" SizeX="48" SizeY="32" SizeZ="3" SizeC="2" SizeT="1""#),
            "{x}"
        );
        assert!(x.contains(r#"PhysicalSizeZ="2" PhysicalSizeZUnit="µm""#), "{x}");
        assert!(x.contains(r#"PhysicalSizeX="0.25" PhysicalSizeXUnit="µm""#), "{x}");
        assert!(x.contains(r#"<TiffData IFD="0" PlaneCount="6"/>"#), "{x}");
        assert!(x.contains(r#"<Image ID="Image:0" Name="cells">"#), "{x}");
        let tz = image(
            vec![axis("t", None, None), axis("y", None, None), axis("x", None, None)],
            None,
        );
        assert!(
            xml(&tz, "a", &[5, 4, 4], &DataType::Float32)
                .unwrap()
                .contains(r#"DimensionOrder="XYTZC""#)
        );
    }

    #[test]
    fn a_long_unnamed_channel_axis_writes_bounded_xml() {
        let img = image(
            vec![
                axis("c", Some("channel"), None),
                axis("y", Some("space"), None),
                axis("x", Some("space"), None),
            ],
            None,
        );
        let count = |x: &str| x.matches("<Channel ").count() as u64;
        let x = xml(&img, "a", &[UNNAMED_CHANNELS, 1, 1], &DataType::UInt8).unwrap();
        assert_eq!(count(&x), UNNAMED_CHANNELS);
        // 2^22 channels were 2^22 elements (about 200 MB); 2^40 aborted.
        for c in [UNNAMED_CHANNELS + 1, 1 << 22, 1 << 40] {
            let x = xml(&img, "a", &[c, 1, 1], &DataType::UInt8).unwrap();
            assert!(x.len() < 2048, "{c} channels: {} bytes", x.len());
            assert!(x.contains(&format!(r#"SizeC="{c}""#)) && count(&x) == 0, "{x}");
        }
    }

    #[test]
    fn no_unit_no_physical_size_and_channels_named_and_coloured() {
        let mut img = image(
            vec![
                axis("c", Some("channel"), None),
                axis("y", Some("space"), None),
                axis("x", Some("space"), None),
            ],
            Some(vec![1.0, 0.5, 0.5]),
        );
        img.channels = vec![
            Channel {
                label: Some("DAPI & <co>".into()),
                color: Some("0000FF".into()),
            },
            Channel {
                label: None,
                color: Some("FF0000".into()),
            },
        ];
        let x = xml(&img, "n", &[2, 8, 8], &DataType::UInt8).unwrap();
        assert!(!x.contains("PhysicalSize"), "{x}");
        assert!(
            x.contains(r#"<Channel ID="Channel:0:0" SamplesPerPixel="1" Name="DAPI &amp; &lt;co&gt;" Color="65535"/>"#),
            "{x}"
        );
        assert!(
            x.contains(r#"<Channel ID="Channel:0:1" SamplesPerPixel="1" Color="-16776961"/>"#),
            "{x}"
        );
    }

    #[test]
    fn axes_and_types_ome_cannot_hold_are_refused() {
        let odd = image(
            vec![
                axis("angle", Some("angle"), None),
                axis("y", None, None),
                axis("x", None, None),
            ],
            None,
        );
        assert_eq!(
            xml(&odd, "a", &[3, 4, 4], &DataType::UInt8),
            Err(Unmapped::Axis("angle".into()))
        );
        let twice = image(
            vec![
                axis("z", None, None),
                axis("z2", Some("space"), None),
                axis("y", None, None),
                axis("x", None, None),
            ],
            None,
        );
        assert!(matches!(
            xml(&twice, "a", &[2, 2, 4, 4], &DataType::UInt8),
            Err(Unmapped::Axis(_))
        ));
        let yx = image(vec![axis("y", None, None), axis("x", None, None)], None);
        assert!(matches!(
            xml(&yx, "a", &[4, 4], &DataType::Int64),
            Err(Unmapped::Type(_))
        ));
        assert_eq!(xml(&yx, "a", &[4, 4, 4], &DataType::UInt8), Err(Unmapped::Shape));
    }
}
