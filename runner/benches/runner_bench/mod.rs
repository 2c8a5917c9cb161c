//! Parts of the runner bench (see `benches/runner.rs`).

pub mod apply;
pub mod logs;

use std::time::Duration;

/// User + system CPU of this process (`RUSAGE_SELF`) or of its waited-for children (`RUSAGE_CHILDREN`),
/// and the peak RSS of this process.
#[derive(Clone, Copy, Default)]
pub struct Usage {
    pub cpu: Duration,
    pub maxrss_kb: i64,
}

pub fn usage(who: i32) -> Usage {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut ru) };
    let tv =
        |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    Usage {
        cpu: tv(ru.ru_utime) + tv(ru.ru_stime),
        maxrss_kb: ru.ru_maxrss,
    }
}

pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
