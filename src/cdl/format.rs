//! How ncdump spells values and names in CDL.
//!
//! Numbers: doubles as C's `%.15g` and floats as `%.7g` (ncdump's default
//! precision), except that when those digits would not read back as the
//! same value, `%.17g` / `%.9g` are used: every value round-trips. As in
//! ncdump, a mantissa without a `.` gets one (`1.`, `1.e+300`), floats get
//! `f`, and the non-finite values are `NaN`, `Infinity`, `-Infinity` (`NaNf`
//! …). Integers carry ncdump's type suffixes.
//!
//! Strings and names are spelled by [`crate::naming`]: one
//! module for every name and string a view writes.

/// C's `%.{precision}g`.
pub fn c_g(x: f64, precision: usize) -> String {
    let p = precision.max(1);
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sci = format!("{:.*e}", p - 1, x);
    let (mantissa, exp) = sci.split_once('e').expect("exponent");
    let exp: i32 = exp.parse().expect("integer exponent");
    if exp < -4 || exp >= p as i32 {
        let m = strip_zeros(mantissa);
        format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Add the `.` ncdump puts in a mantissa that has none.
fn with_dot(s: String) -> String {
    let (mantissa, exp) = match s.find('e') {
        Some(i) => s.split_at(i),
        None => (s.as_str(), ""),
    };
    if mantissa.contains('.') {
        s
    } else {
        format!("{mantissa}.{exp}")
    }
}

/// A double as ncdump writes it, with enough digits to read back exactly.
pub fn double(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    let short = c_g(x, 15);
    let s = if short.parse::<f64>().ok() == Some(x) {
        short
    } else {
        c_g(x, 17)
    };
    with_dot(s)
}

/// A float as ncdump writes it, with enough digits to read back exactly.
pub fn float(x: f32) -> String {
    if x.is_nan() {
        return "NaNf".into();
    }
    if x.is_infinite() {
        return if x > 0.0 {
            "Infinityf".into()
        } else {
            "-Infinityf".into()
        };
    }
    let short = c_g(f64::from(x), 7);
    let s = if short.parse::<f32>().ok() == Some(x) {
        short
    } else {
        c_g(f64::from(x), 9)
    };
    format!("{}f", with_dot(s))
}

pub use crate::naming::quote;

/// A CDL name: [`crate::naming::cdl_name`].
pub fn name(s: &str) -> String {
    crate::naming::cdl_name(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_g_matches_printf() {
        // Expected strings are C printf("%.15g") / ("%.7g") results.
        assert_eq!(c_g(0.1, 15), "0.1");
        assert_eq!(c_g(1.0 / 3.0, 15), "0.333333333333333");
        assert_eq!(c_g(1e-7, 15), "1e-07");
        assert_eq!(c_g(1e300, 15), "1e+300");
        assert_eq!(c_g(123456789012345678.0, 15), "1.23456789012346e+17");
        assert_eq!(c_g(100000.0, 7), "100000");
        assert_eq!(c_g(1e7, 7), "1e+07");
        assert_eq!(c_g(0.0001, 7), "0.0001");
        assert_eq!(c_g(0.00001, 7), "1e-05");
        assert_eq!(c_g(-2.5, 7), "-2.5");
    }

    #[test]
    fn doubles_and_floats_like_ncdump_but_exact() {
        assert_eq!(double(1.0), "1.");
        assert_eq!(double(0.1), "0.1");
        assert_eq!(double(-0.0), "-0.");
        assert_eq!(double(1e-7), "1.e-07");
        assert_eq!(double(1e300), "1.e+300");
        assert_eq!(double(f64::NAN), "NaN");
        assert_eq!(double(f64::NEG_INFINITY), "-Infinity");
        // 15 digits would lose it: 17 are used, and it reads back exactly.
        assert_eq!(double(1.0 / 3.0), "0.33333333333333331");
        for x in [
            1.0 / 3.0,
            6378137.0,
            298.257223563,
            0.1 + 0.2,
            5e-324,
            f64::MAX,
            -1.2345678901234567e-300,
        ] {
            assert_eq!(double(x).parse::<f64>().unwrap(), x, "{x}");
        }
        assert_eq!(float(-9999.0), "-9999.f");
        assert_eq!(float(0.1), "0.1f");
        assert_eq!(float(1e-7), "1.e-07f");
        assert_eq!(float(f32::NAN), "NaNf");
        assert_eq!(float(f32::INFINITY), "Infinityf");
        assert_eq!(float(16777216.0), "16777216.f");
        for x in [1.0f32 / 3.0, 3.4028235e38, 1e-45, 16777216.0, 0.1] {
            assert_eq!(float(x).trim_end_matches('f').parse::<f32>().unwrap(), x, "{x}");
        }
    }

    #[test]
    fn strings_and_names() {
        assert_eq!(quote("a\"b\\c\nd\te"), r#""a\"b\\c\nd\te""#);
        assert_eq!(quote("\u{1}é"), "\"\\001é\"");
        assert_eq!(name("t2m"), "t2m");
        assert_eq!(name("2m temp"), "\\2m\\ temp");
        assert_eq!(name("a:b(c)"), "a\\:b\\(c\\)");
        assert_eq!(name("int64"), "int64_");
        assert_eq!(name("-x"), "_-x");
        assert_eq!(name("a-b.c+d@e"), "a-b.c+d@e");
        assert_eq!(name(""), "_nz_empty");
    }
}
