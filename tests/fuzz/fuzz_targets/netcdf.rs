//! Any bytes as a netCDF file closed on a writable mount (classic, or
//! netCDF-4: HDF5): opening it and reading a region of each variable of
//! each group never panics, hangs or allocates past the reader's bounds.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::Write;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("nzfs-fuzz-netcdf-{}.nc", std::process::id()));
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(data).unwrap();
    drop(f);
    let file = std::fs::File::open(&path).unwrap();
    if let Ok(opened) = nzfs::netcdf::nc4::open(&file) {
        for (i, (_, model)) in opened.groups.iter().enumerate() {
            for v in &model.vars {
                let count: Vec<u64> = model.shape(v).iter().map(|&n| n.min(64)).collect();
                let _ = opened.values(i).read(model, v, &vec![0; count.len()], &count);
            }
        }
    }
});
