//! OME-Zarr images (ome-zarr-py's NGFF 0.4 and 0.5, tests/data/ome/) through
//! real mounts: each image group's `.ome.tif` pyramid (its levels, who may
//! read it, its freshness); the levels' dimensions carry the image's axis names in
//! `header.cdl` and in the `.nc` that netCDF-C reads, and each level has a
//! `data.tif` whose pages GDAL counts; a pixel's size shows as attributes,
//! and a preview takes the image's channel colour and window. The values
//! themselves are compared with zarr-python and tifffile by the corpus
//! check, and the previews' pixels by scripts/check_previews.py.

mod common;

use std::process::Command;

use common::image_tools::{gdal_pixel, tiffinfo};
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

/// Every multiscale image group shows one OME-TIFF: an image, each label
/// image, each field of a plate; `--no-tiff` hides them with `data.tif`.
/// GDAL opens one at level 0 and libtiff finds each page's levels below
/// it (the pyramid's values are compared with zarr-python's by
/// scripts/check_ome_tiff.py, through tifffile).
#[test]
fn each_image_is_one_ome_tiff_pyramid() {
    let m = Mount::new("ome/ngff04.zarr", &[]);
    let tif = m.mp.join("ngff04.ome.tif");
    let out = Command::new("gdalinfo").arg(&tif).output().unwrap();
    let info = String::from_utf8_lossy(&out.stdout);
    assert!(info.contains("Size is 48, 32"), "{info}");
    assert!(
        info.contains("SUBDATASET_6_NAME") && !info.contains("SUBDATASET_7_NAME"),
        "{info}"
    );
    // 6 pages, each with 4 lower levels: 30 directories for libtiff.
    let (listing, stderr) = tiffinfo(&tif);
    assert_eq!(listing.matches("TIFF Directory").count(), 30, "{listing}");
    assert!(listing.contains("Image Width: 3 Image Length: 2"), "{listing}");
    assert!(stderr.is_empty(), "{stderr}");

    let plate = Mount::new("ome/plate.zarr", &[]);
    for well in ["A/1", "A/2"] {
        assert!(plate.mp.join(well).join("0/0.ome.tif").is_file(), "{well}");
        assert!(
            plate.mp.join(well).join("0/labels/cells/cells.ome.tif").is_file(),
            "{well}"
        );
    }
    // A plate, a well and the labels group are not images.
    let listed = |dir: &str| -> Vec<String> {
        std::fs::read_dir(plate.mp.join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect()
    };
    for dir in ["", "A/1", "A/1/0/labels"] {
        assert!(
            !listed(dir).iter().any(|n| n.ends_with(".ome.tif")),
            "{dir}: {:?}",
            listed(dir)
        );
    }
    let hidden = Mount::new("ome/ngff04.zarr", &["--no-tiff"]);
    assert!(!hidden.mp.join("ngff04.ome.tif").exists());
    assert!(!hidden.mp.join("s0/data.tif").exists());
}

/// A level whose planes differ from level 0's (it halves z too) cannot be
/// a SubIFD: the pyramid leaves it out, says so in the log, and the level
/// keeps its own data.tif.
#[test]
fn a_level_with_other_planes_is_left_out_of_the_pyramid() {
    let m = Mount::new("ome/zhalved.zarr", &[]);
    let (listing, _) = tiffinfo(&m.mp.join("zhalved.ome.tif"));
    // 4 z planes, each with one level below it (s2's 8 x 6), not s1's.
    assert_eq!(listing.matches("TIFF Directory").count(), 8, "{listing}");
    assert!(listing.contains("Image Width: 8 Image Length: 6"), "{listing}");
    assert!(!listing.contains("Image Width: 16 Image Length: 12"), "{listing}");
    assert!(m.mp.join("s1/data.tif").is_file());
    let log = m.log();
    assert!(
        log.contains("left out of its image's .ome.tif") && log.contains("path=s1"),
        "{log}"
    );
}

/// The OME-TIFF combines every object of every level it holds, so it
/// follows the rule of the other combined files under `allow_other`:
/// another user reads it when every object is readable, and is refused it
/// when one chunk of the smallest level is not.
#[test]
fn an_ome_tiff_denies_what_a_levels_chunk_denies() {
    let users = common::users::Users::create();
    for restricted in [false, true] {
        let (_tmp, m) = common::users::mount_for_others("ome/ngff04.zarr", restricted.then_some("s4/0/0/0/0"));
        let tif = m.mp.join("ngff04.ome.tif");
        let out = common::users::cat_output(&users.other, &tif);
        match restricted {
            true => assert!(
                !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
                "{out:?}"
            ),
            false => assert_eq!(out.stdout, std::fs::read(&tif).unwrap(), "{out:?}"),
        }
    }
}

/// A removed chunk of a level shows in the OME-TIFF on the next read after
/// the attribute timeout, as in that level's data.bin.
#[test]
fn an_ome_tiff_shows_a_replaced_chunk() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("o.zarr");
    common::copy_dir(&common::data_dir().join("ome/zhalved.zarr"), &store);
    let m = Mount::at(&store, &[]);
    let tif = m.mp.join("o.ome.tif");
    let before = std::fs::read(&tif).unwrap();
    let s2 = std::fs::read(m.mp.join("s2/data.bin")).unwrap();
    // Level 2's pixels end the file: 4 planes of 6 x 8 uint16, each on a
    // 4 KiB page of its own.
    let last_level = |file: &[u8]| -> Vec<u8> {
        let start = file.len() - 4 * 4096;
        (0..4).flat_map(|p| file[start + p * 4096..][..96].to_vec()).collect()
    };
    assert_eq!(last_level(&before), s2);
    // Remove level 2's one chunk: the level now reads its fill.
    std::fs::remove_file(store.join("s2/c/0/0/0")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let after = std::fs::read(&tif).unwrap();
    let s2 = std::fs::read(m.mp.join("s2/data.bin")).unwrap();
    assert_ne!(before, after, "the .ome.tif still shows the removed chunk");
    assert_eq!(last_level(&after), s2, "its last level's pixels are s2's data.bin");
}

/// A plane wider than 8192 is in tiles of about its chunks' size (30 x
/// 1000 chunks: 32 x 1008 tiles); the smaller level stays in strips. GDAL
/// reads pixels of the last, padded, tiles as the fixture script made them
/// (`x // 16 * 3 + y * 5`).
#[test]
fn a_plane_wider_than_8192_is_in_tiles() {
    let m = Mount::new("ome/wide.zarr", &[]);
    let tif = m.mp.join("wide.ome.tif");
    let (listing, stderr) = tiffinfo(&tif);
    assert!(listing.contains("Tile Width: 1008 Tile Length: 32"), "{listing}");
    assert!(
        listing.contains("Image Width: 4150 Image Length: 24") && listing.contains("Rows/Strip: 24"),
        "{listing}"
    );
    assert!(stderr.is_empty(), "{stderr}");
    for (x, y) in [(8299usize, 47usize), (5000, 33), (0, 0), (1007, 31)] {
        assert_eq!(gdal_pixel(&tif, x, y), (x / 16 * 3 + y * 5) as f64, "pixel ({x}, {y})");
    }
}

/// An image as ngff-zarr writes it (NGFF 0.5, sharded levels nested at
/// `scale0/image`, a default level 1 that halves z): its OME-TIFF holds
/// level 0's 16 planes and no SubIFD, and GDAL reads a plane.
#[test]
fn an_ngff_zarr_image_has_its_ome_tiff() {
    let m = Mount::new("ome/ngffzarr.zarr", &[]);
    let tif = m.mp.join("ngffzarr.ome.tif");
    let (listing, _) = tiffinfo(&tif);
    assert_eq!(listing.matches("TIFF Directory").count(), 16, "{listing}");
    assert!(!listing.contains("SubIFD"), "{listing}");
    assert!(m.log().contains("path=scale1/image"), "{}", m.log());
    let out = Command::new("gdalinfo").arg(&tif).output().unwrap();
    let info = String::from_utf8_lossy(&out.stdout);
    assert!(
        info.contains("Size is 64, 64") && info.contains("SUBDATASET_16_NAME"),
        "{info}"
    );
}

/// An OME-Zarr store named as ome-zarr-py names them (`cells.ome.zarr`)
/// shows `cells.ome.tif`, `cells.nc` and an index titled `cells` (it
/// showed `cells.ome.ome.tif`, `cells.ome.nc` and `cells.ome`).
#[test]
fn an_ome_zarr_stores_names_are_not_doubled() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("cells.ome.zarr");
    common::copy_dir(&common::data_dir().join("ome/ngff05.zarr"), &store);
    let m = Mount::at(&store, &[]);
    let mut names: Vec<String> = std::fs::read_dir(&m.mp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.contains(&"cells.ome.tif".to_string()), "{names:?}");
    assert!(names.contains(&"cells.nc".to_string()), "{names:?}");
    assert!(
        !names.iter().any(|n| n.contains("ome.ome") || n == "cells.ome.nc"),
        "{names:?}"
    );
    let index = std::fs::read_to_string(m.mp.join("index.html")).unwrap();
    assert!(
        index.contains("<title>cells</title>"),
        "{}",
        &index[..index.len().min(400)]
    );
}

/// index.html links what a person looks for: each array's data.tif and
/// preview.png beside header.cdl and data.bin, an image group's OME-TIFF,
/// and the image's channels by their `omero` labels.
#[test]
fn the_index_links_tiffs_previews_and_names_channels() {
    let m = Mount::new("ome/ngff04.zarr", &[]);
    let index = std::fs::read_to_string(m.mp.join("index.html")).unwrap();
    for want in [
        "href=\"ngff04.ome.tif\"",
        "href=\"s0/data.tif\"",
        "href=\"s0/preview.png\">preview.png</a>",
        "channels: cells, stripes",
    ] {
        assert!(index.contains(want), "{want} missing from index.html:\n{index}");
    }
    for link in ["ngff04.ome.tif", "s0/data.tif", "s0/preview.png"] {
        assert!(m.mp.join(link).exists(), "{link}");
    }
}
