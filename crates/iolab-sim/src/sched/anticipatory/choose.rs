//! as_choose_req on sectors (ELEVATORS.md 1.5): a one-way elevator that
//! allows short backward seeks at twice the cost of a forward one.

/// Requests more than this far behind the head "wrap": they wait for the
/// next sweep (1 Mi sectors = 512 MiB; not tunable in AS).
pub const MAXBACK: u64 = 1024 * 1024;
/// A backward seek costs this many times a forward one.
pub const BACK_PENALTY: u64 = 2;

/// Cost of going from `last` to `s`, or None if `s` wraps.
fn cost(last: u64, s: u64) -> Option<u64> {
    if s >= last {
        Some(s - last)
    } else if last - s <= MAXBACK {
        Some((last - s) * BACK_PENALTY)
    } else {
        None
    }
}

/// Does as_choose_req prefer the request at `s1` over the one at `s2`,
/// with the head at `last`? Non-wrapped beats wrapped; of two wrapped, the
/// lower sector (where the next sweep starts); else the lower cost; on a
/// tie, the higher sector.
pub fn prefer_first(last: u64, s1: u64, s2: u64) -> bool {
    match (cost(last, s1), cost(last, s2)) {
        (Some(_), None) => true,
        (None, Some(_)) => false,
        (None, None) => s1 <= s2,
        (Some(d1), Some(d2)) => d1 < d2 || (d1 == d2 && s1 >= s2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAST: u64 = 10_000_000;

    #[test]
    fn ahead_beats_behind_at_the_same_distance() {
        assert!(prefer_first(LAST, LAST + 100, LAST - 100));
        assert!(!prefer_first(LAST, LAST - 100, LAST + 100));
    }

    #[test]
    fn behind_costs_double() {
        // 100 back costs 200: beats 201 ahead, loses to 199 ahead.
        assert!(prefer_first(LAST, LAST - 100, LAST + 201));
        assert!(!prefer_first(LAST, LAST - 100, LAST + 199));
    }

    #[test]
    fn ties_go_to_the_higher_sector() {
        // 100 back (cost 200) against 200 ahead.
        assert!(prefer_first(LAST, LAST + 200, LAST - 100));
        assert!(!prefer_first(LAST, LAST - 100, LAST + 200));
        // The same sector: the first wins (s1 >= s2).
        assert!(prefer_first(LAST, LAST + 5, LAST + 5));
    }

    #[test]
    fn beyond_maxback_a_request_wraps() {
        let wrapped = LAST - MAXBACK - 1;
        let edge = LAST - MAXBACK; // exactly MAXBACK behind: still allowed
                                   // Anything reachable beats a wrapped request, however far ahead.
        assert!(prefer_first(LAST, LAST + 1_000_000_000, wrapped));
        assert!(!prefer_first(LAST, wrapped, edge));
        // Two wrapped requests: the lower sector.
        assert!(prefer_first(LAST, 5, wrapped));
        assert!(!prefer_first(LAST, wrapped, 5));
    }
}
