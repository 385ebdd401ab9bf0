//! Device monitoring: utilization of the executor's cores and the machine's temperature.
//!
//! The tile VM calls [`record_busy`] once per block with the block's start and end; the
//! intervals go into the calling thread's ring buffer of the latest [`RING_CAPACITY`] (block
//! events of [`pyasc_events::event`]). [`utilization`] sums how
//! much of them overlaps a trailing window and divides by `cores × window`. When the ring has
//! wrapped inside the window (more blocks than it holds), the busy time over the span it still
//! covers is scaled to the whole window.
//!
//! [`temperature_celsius`] reads the hottest hwmon or thermal-zone sensor under `/sys/class`.

use std::path::Path;
use std::time::{Duration, Instant};

pub use pyasc_events::event::{BusyRing, RING_CAPACITY};

/// Busy percent of `cores` over `[from, to)`, clamped to 0..=100.
pub fn percent(ring: &BusyRing, from: u64, to: u64, cores: usize) -> f64 {
    if to <= from {
        return 0.0;
    }
    let capacity = (to - from) as f64 * cores.max(1) as f64;
    (100.0 * ring.busy_in(from, to) / capacity).clamp(0.0, 100.0)
}

/// Record that the calling thread ran a block from `start` to `end` (a block event: kept in the
/// thread's ring for [`utilization`], and in the event stream while someone collects).
pub fn record_busy(start: Instant, end: Instant) {
    pyasc_events::event::record_block(start, end);
}

/// Percent of `cores × window` the executor's blocks were busy during the last `window`, in 0..=100.
pub fn utilization(window: Duration, cores: usize) -> f64 {
    pyasc_events::event::busy_percent(window, cores)
}

/// The hottest temperature sensor of the machine in °C, or why there is none.
pub fn temperature_celsius() -> Result<f64, String> {
    temperature_under(Path::new("/sys/class"))
}

/// Like [`temperature_celsius`], with `class` standing for `/sys/class`.
pub fn temperature_under(class: &Path) -> Result<f64, String> {
    let mut files = Vec::new();
    for (dir, prefix, accept) in [
        ("hwmon", "hwmon", (|n: &str| n.starts_with("temp") && n.ends_with("_input")) as fn(&str) -> bool),
        ("thermal", "thermal_zone", |n: &str| n == "temp"),
    ] {
        let Ok(entries) = std::fs::read_dir(class.join(dir)) else { continue };
        for dev in entries.flatten() {
            if !dev.file_name().to_string_lossy().starts_with(prefix) {
                continue;
            }
            let Ok(inner) = std::fs::read_dir(dev.path()) else { continue };
            files.extend(inner.flatten().filter(|f| accept(&f.file_name().to_string_lossy())).map(|f| f.path()));
        }
    }
    let readings: Vec<f64> = files
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter_map(|s| s.trim().parse::<i64>().ok())
        .map(|milli| milli as f64 / 1000.0)
        .filter(|c| (-273.0..=1000.0).contains(c))
        .collect();
    let searched =
        format!("{}/hwmon/hwmon*/temp*_input and {}/thermal/thermal_zone*/temp", class.display(), class.display());
    match readings.into_iter().reduce(f64::max) {
        Some(c) => Ok(c),
        None if files.is_empty() => Err(format!("no temperature sensor on this machine: found none of {searched}")),
        None => Err(format!("{} sensor file(s) under {searched} gave no readable temperature", files.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn empty_ring_is_idle() {
        let r = BusyRing::new(16);
        assert_eq!(percent(&r, 0, 1000 * MS, 4), 0.0);
    }

    #[test]
    fn overlap_is_clipped_to_the_window() {
        let r = BusyRing::new(16);
        r.push(0, 100 * MS); // before the window
        r.push(900 * MS, 1100 * MS); // 100 ms inside
        r.push(1500 * MS, 1600 * MS); // 100 ms inside
        r.push(1900 * MS, 2100 * MS); // 100 ms inside, the rest is after `to`
        assert_eq!(r.busy_in(1000 * MS, 2000 * MS), (300 * MS) as f64);
        assert!((percent(&r, 1000 * MS, 2000 * MS, 1) - 30.0).abs() < 1e-9);
        assert!((percent(&r, 1000 * MS, 2000 * MS, 2) - 15.0).abs() < 1e-9);
    }

    #[test]
    fn cores_add_up_and_clamp() {
        let r = BusyRing::new(16);
        for _ in 0..2 {
            r.push(0, 1000 * MS);
        }
        assert_eq!(percent(&r, 0, 1000 * MS, 2), 100.0);
        r.push(0, 1000 * MS); // more busy time than cores: clamped
        assert_eq!(percent(&r, 0, 1000 * MS, 2), 100.0);
        assert_eq!(percent(&r, 0, 1000 * MS, 4), 75.0);
    }

    #[test]
    fn wrapped_ring_extrapolates() {
        let r = BusyRing::new(10);
        // 100 blocks of 5 ms every 10 ms: one core half busy over [0, 1000 ms).
        for i in 0..100u64 {
            r.push(i * 10 * MS, i * 10 * MS + 5 * MS);
        }
        assert_eq!(r.len(), 10);
        let p = percent(&r, 0, 1000 * MS, 1);
        assert!((p - 50.0).abs() < 1e-9, "{p}");
    }

    #[test]
    fn inverted_intervals_count_nothing() {
        let r = BusyRing::new(4);
        r.push(50, 10);
        assert_eq!(r.busy_in(0, 100), 0.0);
        assert_eq!(percent(&r, 100, 100, 1), 0.0);
    }

    #[test]
    fn global_recorder_sees_recent_work() {
        let start = Instant::now();
        std::thread::sleep(Duration::from_millis(30));
        record_busy(start, Instant::now());
        let u = utilization(Duration::from_millis(100), 1);
        assert!(u > 20.0, "{u}");
    }

    fn fake_sysfs(name: &str) -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("pyasc-monitor-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        root
    }

    #[test]
    fn hottest_sensor_wins() {
        let root = fake_sysfs("hot");
        std::fs::create_dir_all(root.join("hwmon/hwmon0")).unwrap();
        std::fs::create_dir_all(root.join("hwmon/hwmon1")).unwrap();
        std::fs::create_dir_all(root.join("thermal/thermal_zone0")).unwrap();
        std::fs::write(root.join("hwmon/hwmon0/temp1_input"), "45000\n").unwrap();
        std::fs::write(root.join("hwmon/hwmon0/temp1_label"), "99000\n").unwrap(); // not a reading
        std::fs::write(root.join("hwmon/hwmon1/temp3_input"), "61500\n").unwrap();
        std::fs::write(root.join("thermal/thermal_zone0/temp"), "52000\n").unwrap();
        assert_eq!(temperature_under(&root), Ok(61.5));
        std::fs::write(root.join("thermal/thermal_zone0/temp"), "70250").unwrap();
        assert_eq!(temperature_under(&root), Ok(70.25));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn no_sensor_names_what_was_searched() {
        let root = fake_sysfs("none");
        let err = temperature_under(&root).unwrap_err();
        assert!(err.contains("no temperature sensor"), "{err}");
        assert!(err.contains("hwmon") && err.contains("thermal_zone"), "{err}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn unreadable_sensor_is_reported() {
        let root = fake_sysfs("bad");
        std::fs::create_dir_all(root.join("thermal/thermal_zone3")).unwrap();
        std::fs::write(root.join("thermal/thermal_zone3/temp"), "garbage").unwrap();
        let err = temperature_under(&root).unwrap_err();
        assert!(err.contains("1 sensor file(s)"), "{err}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
