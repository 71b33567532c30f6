//! CF time coordinates as dates, for `index.html`: a value `v` of a
//! variable whose `units` are `UNIT since REFERENCE` is the instant
//! `REFERENCE + v × UNIT`, in the proleptic Gregorian calendar (CF's
//! `standard` calendar agrees with it from 1582-10-15 on).
//!
//! Invariants: only the calendars that agree with that arithmetic are
//! read (`standard`, `gregorian`, `proleptic_gregorian`, or none given);
//! only fixed-length units (seconds to days, and weeks; not months or
//! years, whose UDUNITS lengths surprise); only dates from 1583 to 9999;
//! anything else gives `None`, never a wrong date.

/// Seconds in one `unit`, for the units CF time allows that have a fixed
/// length.
fn unit_seconds(unit: &str) -> Option<f64> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "min" | "mins" | "minute" | "minutes" => 60.0,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3600.0,
        "d" | "day" | "days" => 86400.0,
        "week" | "weeks" => 604_800.0,
        _ => return None,
    })
}

/// Days from 1970-01-01 to `y-m-d` (proleptic Gregorian; Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `days` after 1970-01-01 (Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The reference instant of `since` (`2000-01-01`, `1970-1-1 00:00:00`,
/// `2000-01-01T12:00:00Z`, `1900-01-01 00:00:0.0`), in seconds from
/// 1970-01-01 UTC.
fn reference(since: &str) -> Option<f64> {
    let mut parts = since.trim().splitn(2, [' ', 'T']);
    let date = parts.next()?;
    let mut ymd = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (
        ymd.next()??,
        ymd.next().unwrap_or(Some(1))?,
        ymd.next().unwrap_or(Some(1))?,
    );
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let mut secs = days_from_civil(y, m, d) as f64 * 86400.0;
    if let Some(time) = parts.next() {
        // A zone other than UTC is left out: its offset is not applied.
        let time = time.trim().trim_end_matches(['Z', 'z']).trim();
        if time.contains(['+']) || time.matches('-').count() > 0 || time.contains(' ') {
            return None;
        }
        let mut hms = time.splitn(3, ':');
        let h = hms.next()?.parse::<f64>().ok()?;
        let min = hms.next().map_or(Some(0.0), |v| v.parse::<f64>().ok())?;
        let s = hms.next().map_or(Some(0.0), |v| v.parse::<f64>().ok())?;
        secs += h * 3600.0 + min * 60.0 + s;
    }
    Some(secs)
}

/// The time axis of 1-D array metadata `m`, if `index.html` shows its
/// first and last values as dates.
pub fn axis_of(m: &crate::zarr::metadata::ArrayMetadata) -> Option<TimeAxis> {
    let text = |k: &str| super::attr(&m.attributes, k).and_then(crate::json::Value::as_str);
    (m.shape.len() == 1).then(|| TimeAxis::of(text("units")?, text("calendar")))?
}

/// How a CF time variable's values read as dates: its unit's length and
/// its reference, from `units` and `calendar`; `None` where they are not
/// CF time that proleptic Gregorian arithmetic gets right.
pub struct TimeAxis {
    unit: f64,
    reference: f64,
}

impl TimeAxis {
    /// The axis of `units` under `calendar`.
    pub fn of(units: &str, calendar: Option<&str>) -> Option<TimeAxis> {
        match calendar.map(str::to_ascii_lowercase).as_deref() {
            None | Some("standard" | "gregorian" | "proleptic_gregorian") => {}
            Some(_) => return None,
        }
        let (unit, since) = units.trim().split_once(" since ")?;
        Some(TimeAxis {
            unit: unit_seconds(unit.trim())?,
            reference: reference(since)?,
        })
    }

    /// Value `v` as a date (`2000-01-31`), with the time of day where it is
    /// not midnight (`2000-01-31 06:00:00`); `None` outside 1583 to 9999.
    pub fn date(&self, v: f64) -> Option<String> {
        let secs = (self.reference + v * self.unit).round();
        if !secs.is_finite() {
            return None;
        }
        let secs = secs as i64;
        let (days, rest) = (secs.div_euclid(86400), secs.rem_euclid(86400));
        let (y, m, d) = civil_from_days(days);
        if !(1583..=9999).contains(&y) {
            return None;
        }
        Some(match rest {
            0 => format!("{y:04}-{m:02}-{d:02}"),
            r => format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", r / 3600, r / 60 % 60, r % 60),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cf_units_read_as_dates() {
        let days = TimeAxis::of("days since 2000-01-01", Some("standard")).unwrap();
        // 2000 is a leap year: its day 365 is 31 December.
        assert_eq!(days.date(0.0).unwrap(), "2000-01-01");
        assert_eq!(days.date(59.0).unwrap(), "2000-02-29");
        assert_eq!(days.date(365.0).unwrap(), "2000-12-31");
        assert_eq!(days.date(366.0).unwrap(), "2001-01-01");
        assert_eq!(days.date(-1.0).unwrap(), "1999-12-31");
        let hours = TimeAxis::of("hours since 1970-01-01 00:00:00", None).unwrap();
        assert_eq!(hours.date(36.0).unwrap(), "1970-01-02 12:00:00");
        // The Unix time of 2001-09-09 01:46:40 UTC is 10^9.
        let secs = TimeAxis::of("seconds since 1970-1-1T00:00:00Z", Some("gregorian")).unwrap();
        assert_eq!(secs.date(1e9).unwrap(), "2001-09-09 01:46:40");
        let ref_time = TimeAxis::of("minutes since 1900-01-01 06:30", None).unwrap();
        assert_eq!(ref_time.date(30.0).unwrap(), "1900-01-01 07:00:00");
    }

    #[test]
    fn what_the_arithmetic_would_get_wrong_is_left_out() {
        assert!(TimeAxis::of("days since 2000-01-01", Some("noleap")).is_none());
        assert!(TimeAxis::of("days since 2000-01-01", Some("360_day")).is_none());
        assert!(TimeAxis::of("months since 2000-01-01", None).is_none());
        assert!(TimeAxis::of("years since 2000-01-01", None).is_none());
        assert!(TimeAxis::of("K", None).is_none());
        assert!(TimeAxis::of("days since 2000-13-01", None).is_none());
        assert!(TimeAxis::of("hours since 2000-01-01 00:00:00 +05:00", None).is_none());
        let days = TimeAxis::of("days since 1500-01-01", None).unwrap();
        assert!(days.date(0.0).is_none(), "before 1583");
        assert!(days.date(f64::NAN).is_none());
        assert!(days.date(1e300).is_none());
    }
}
