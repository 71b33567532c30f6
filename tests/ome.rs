//! OME-Zarr images (ome-zarr-py's NGFF 0.4 and 0.5, tests/data/ome/) through
//! real mounts: the levels' dimensions carry the image's axis names in
//! `header.cdl` and in the `.nc` that netCDF-C reads, and each level has a
//! `data.tif` whose pages GDAL counts; a pixel's size shows as attributes,
//! and a preview takes the image's channel colour and window. The values
//! themselves are compared with zarr-python and tifffile by the corpus
//! check, and the previews' pixels by scripts/check_previews.py.

mod common;

use std::process::Command;

use common::mount::Mount;
use common::netcdf_tools::ncdump;

#[test]
fn ngff_levels_are_described_with_the_images_axes() {
    // NGFF 0.4 (Zarr v2): the levels carry no dimension names themselves.
    let m = Mount::new("ome/ngff04.zarr", &[]);
    let cdl = std::fs::read_to_string(m.mp.join("header.cdl")).unwrap();
    assert!(cdl.contains("ushort s0(c, z, y, x) ;"), "{cdl}");
    // A lower level: the same axes, at its own lengths.
    assert!(cdl.contains("ushort s1(c, z, y_16, x_24) ;"), "{cdl}");
    assert!(!cdl.contains("_Anonymous_Dim"), "{cdl}");
    let nc = ncdump(&["-h"], &m.mp.join("ngff04.nc"));
    assert!(nc.contains("s0(c, z, y, x)"), "{nc}");
    // NGFF 0.5 (Zarr v3): the axes under `ome`.
    let m = Mount::new("ome/ngff05.zarr", &[]);
    let cdl = std::fs::read_to_string(m.mp.join("header.cdl")).unwrap();
    assert!(cdl.contains("float s0(t, c, z, y, x) ;"), "{cdl}");
}

#[test]
fn each_level_is_a_tiff_of_its_planes() {
    let m = Mount::new("ome/ngff04.zarr", &[]);
    for (level, (w, h)) in [("s0", (48, 32)), ("s2", (12, 8))] {
        let tif = m.mp.join(level).join("data.tif");
        let out = Command::new("gdalinfo").arg(&tif).output().unwrap();
        let info = String::from_utf8_lossy(&out.stdout);
        assert!(info.contains(&format!("Size is {w}, {h}")), "{level}: {info}");
        // c x z = 6 planes.
        assert!(
            info.contains("SUBDATASET_6_NAME") && !info.contains("SUBDATASET_7_NAME"),
            "{level}: {info}"
        );
    }
}

/// A level says how large its pixels are (from its `scale` and the axes'
/// units), in `header.cdl` and in the `.nc` as netCDF-C reads it.
#[test]
fn a_levels_pixel_size_shows_as_attributes() {
    let m = Mount::new("ome/ngff04.zarr", &[]);
    let cdl = std::fs::read_to_string(m.mp.join("header.cdl")).unwrap();
    for line in [
        "s0:ome_scale_z = 2. ;",
        "s0:ome_units_z = \"micrometer\" ;",
        "s0:ome_scale_x = 0.5 ;",
        "s1:ome_scale_x = 1. ;",
        "s4:ome_scale_y = 8. ;",
    ] {
        assert!(cdl.contains(line), "{line}: {cdl}");
    }
    // The channel axis has neither a unit nor a physical scale.
    assert!(!cdl.contains("ome_scale_c"), "{cdl}");
    let nc = ncdump(&["-h"], &m.mp.join("ngff04.nc"));
    assert!(
        nc.contains("s0:ome_scale_y = 0.5 ;") && nc.contains("s2:ome_units_x = \"micrometer\" ;"),
        "{nc}"
    );
}

/// A level's preview is drawn in its image's channel 0 colour over that
/// channel's display window (`omero`), and says so.
#[test]
fn a_levels_preview_takes_the_omero_colour_and_window() {
    let m = Mount::new("ome/ngff04.zarr", &[]);
    let png = std::fs::read(m.mp.join("s0").join("preview.png")).unwrap();
    let text = String::from_utf8_lossy(&png);
    assert!(
        text.contains("omero channel 0 (cells): black at 200 to #00FF00 at 3000"),
        "{}",
        &text[..400.min(text.len())]
    );
    // Without omero (NGFF 0.5 fixture): viridis.
    let m = Mount::new("ome/ngff05.zarr", &[]);
    let png = std::fs::read(m.mp.join("s0").join("preview.png")).unwrap();
    assert!(String::from_utf8_lossy(&png).contains("viridis over the 2nd-98th percentiles"));
}
