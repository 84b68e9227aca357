//! The failover's chart (issue 43, point 6): both engines on one time axis, from the per-100 ms
//! buckets the figures already carry (and `result.json` keeps): attempts acknowledged and attempts
//! failed, as rates, with the kill drawn in. Drawn by the report crate's SVG line charts.

use super::figures::{BUCKET_MS, Figures};
use orders_bench_report::charts::{self, Chart, MONGO_COLOR, PG_COLOR, Point, Series};

/// The chart's file stem (`charts/<stem>.svg` beside the report).
pub const STEM: &str = "failover-rate";

/// One line per bucket: x the bucket's start in seconds from the run's start, y per second.
fn line(label: String, color: &'static str, per_bucket: &[u32], dashed: bool) -> Series {
    let per_second = 1000.0 / BUCKET_MS;
    let points = per_bucket
        .iter()
        .enumerate()
        .map(|(i, n)| Point { x: i as f64 * BUCKET_MS / 1000.0, y: f64::from(*n) * per_second, ok: true })
        .collect();
    Series { label, color, points, faint: false, dashed }
}

/// The chart of both engines' buckets with the kill (`kill_ms` from the run's start) marked.
pub fn chart(pg: &Figures, mongo: &Figures, kill_ms: Option<f64>) -> Chart {
    Chart {
        title: "Acknowledged and failed inserts per 100 ms, across the kill".into(),
        x_label: "seconds from the run's start".into(),
        y_label: "attempts per second (100 ms buckets)".into(),
        log_y: false,
        series: vec![
            line("PostgreSQL acknowledged".into(), PG_COLOR, &pg.acked_per_bucket, false),
            line("PostgreSQL failed".into(), PG_COLOR, &pg.failed_per_bucket, true),
            line("MongoDB acknowledged".into(), MONGO_COLOR, &mongo.acked_per_bucket, false),
            line("MongoDB failed".into(), MONGO_COLOR, &mongo.failed_per_bucket, true),
        ],
        reference: None,
        diagonal: false,
        marker: kill_ms.map(|ms| (ms / 1000.0, "both primaries killed".to_owned())),
    }
}

/// The outcome's chart entry: (stem, caption, SVG).
pub fn entry(pg: &Figures, mongo: &Figures, kill_ms: Option<f64>) -> (String, String, String) {
    let caption = "Attempts acknowledged (solid) and failed (dashed) per 100 ms, as rates, PostgreSQL and MongoDB on \
                   one time axis; the dashed red line is the moment both primaries were killed";
    (STEM.to_owned(), caption.to_owned(), charts::render(&chart(pg, mongo, kill_ms)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use orders_bench_report::charts::tests::assert_well_formed;

    /// 10 s of 100 ms buckets at 50 acknowledged each, with `gap` buckets from the kill (4 s)
    /// acknowledging nothing and failing 20.
    fn figures(gap: usize) -> Figures {
        let mut f = Figures { acked_per_bucket: vec![5; 100], failed_per_bucket: vec![0; 100], ..Figures::default() };
        for b in 40..40 + gap {
            f.acked_per_bucket[b] = 0;
            f.failed_per_bucket[b] = 2;
        }
        f
    }

    /// The `points` of the polyline drawn in `color`, dashed or not.
    fn polyline<'a>(svg: &'a str, color: &str, dashed: bool) -> Vec<(&'a str, &'a str)> {
        svg.split("<polyline ")
            .skip(1)
            .filter_map(|rest| rest.split("/>").next())
            .filter(|p| p.contains(&format!("stroke=\"{color}\"")) && p.contains("stroke-dasharray") == dashed)
            .flat_map(|p| p.split('"').nth(1).unwrap_or_default().split(' '))
            .filter_map(|xy| xy.split_once(','))
            .collect()
    }

    #[test]
    fn both_engines_are_drawn_on_one_axis_with_the_kill_where_it_was() {
        let svg = entry(&figures(25), &figures(60), Some(4000.0)).2;
        assert_well_formed(&svg);
        for color in [PG_COLOR, MONGO_COLOR] {
            for dashed in [false, true] {
                assert_eq!(polyline(&svg, color, dashed).len(), 100, "{color} dashed {dashed}");
            }
        }
        // The kill marker stands at the x of the kill's bucket (40: 4.0 s) in every series.
        let marker = svg.split(r#"<line class="marker" x1=""#).nth(1).and_then(|r| r.split('"').next());
        let kill_x = polyline(&svg, PG_COLOR, false)[40].0;
        assert_eq!(marker, Some(kill_x));
        assert_eq!(polyline(&svg, MONGO_COLOR, true)[40].0, kill_x);
        // Before the kill PostgreSQL acknowledges (50/s), at it nothing: its line drops there.
        let pg = polyline(&svg, PG_COLOR, false);
        assert_ne!(pg[39].1, pg[40].1);
        assert_eq!(pg[40].1, pg[64].1);
        assert_ne!(pg[64].1, pg[65].1, "PostgreSQL is back after 25 buckets");
        let mongo = polyline(&svg, MONGO_COLOR, false);
        assert_eq!(mongo[40].1, mongo[65].1, "MongoDB is still out after 25 buckets");
        assert!(svg.contains("both primaries killed"));
    }

    #[test]
    fn a_run_without_a_kill_or_buckets_still_renders() {
        let svg = entry(&Figures::default(), &Figures::default(), None).2;
        assert_well_formed(&svg);
        assert!(!svg.contains("class=\"marker\""));
    }
}
