//! Hand-written SVG line charts for the reports (no plotting crate; why, measured, in
//! docs/decisions.md): p95 latency against offered rate on a logarithmic axis with the pass mark
//! drawn in, achieved against offered rate with the "achieved = offered" diagonal, and time series
//! with a marker (the failover's kill). A step that failed the pass mark is a hollow point. The
//! output is a standalone SVG document that also works inline in HTML.

use std::fmt::Write as _;

/// PostgreSQL's colour in every chart (the first target's).
pub const PG_COLOR: &str = "#336791";
/// MongoDB's (the second target's).
pub const MONGO_COLOR: &str = "#3f9c35";
/// The colours of the targets in report order.
const PALETTE: [&str; 6] = [PG_COLOR, MONGO_COLOR, "#c0392b", "#8e44ad", "#d68910", "#17a589"];

/// The colour of the `index`-th target of a round.
pub fn color(index: usize) -> &'static str {
    PALETTE[index % PALETTE.len()]
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    /// False: drawn hollow (the step failed).
    pub ok: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub color: &'static str,
    pub points: Vec<Point>,
    /// Later repeats are drawn fainter and without a legend entry.
    pub faint: bool,
    /// Dashed line (tells overlapping series apart).
    pub dashed: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub log_y: bool,
    pub series: Vec<Series>,
    /// Horizontal reference line (value, label), e.g. the p95 pass mark.
    pub reference: Option<(f64, String)>,
    /// Draw y = x.
    pub diagonal: bool,
    /// Vertical reference line (x value, label), e.g. the moment a primary was killed.
    pub marker: Option<(f64, String)>,
}

/// A series with more points than this is drawn as a line alone (its dots would hide it).
const DOTS_UP_TO: usize = 100;

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 48.0;

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// 1, 2 or 5 times a power of ten, about a fifth of `range`.
fn tick_step(range: f64) -> f64 {
    let raw = (range / 5.0).max(1e-9);
    let power = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * power).find(|s| *s >= raw).unwrap_or(10.0 * power)
}

fn label(value: f64) -> String {
    if value >= 1000.0 && value % 1000.0 == 0.0 {
        format!("{}k", value / 1000.0)
    } else if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value}")
    }
}

struct Axis {
    min: f64,
    max: f64,
    log: bool,
}

impl Axis {
    fn linear(max: f64) -> Self {
        let step = tick_step(max.max(1.0));
        Self { min: 0.0, max: (max.max(1.0) / step).ceil() * step, log: false }
    }

    fn log(min: f64, max: f64) -> Self {
        let min = 10f64.powf(min.max(0.01).log10().floor());
        let max = 10f64.powf(max.max(min * 10.0).log10().ceil());
        Self { min, max, log: true }
    }

    /// 0..1 along the axis.
    fn fraction(&self, value: f64) -> f64 {
        let f = if self.log {
            (value.max(self.min).log10() - self.min.log10()) / (self.max.log10() - self.min.log10())
        } else {
            (value - self.min) / (self.max - self.min)
        };
        f.clamp(0.0, 1.0)
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let mut ticks = vec![self.min];
            while let Some(last) = ticks.last().copied().filter(|t| *t < self.max) {
                ticks.push(last * 10.0);
            }
            ticks
        } else {
            let step = tick_step(self.max - self.min);
            (0..=((self.max - self.min) / step).round() as usize).map(|i| self.min + i as f64 * step).collect()
        }
    }
}

pub fn render(chart: &Chart) -> String {
    draw(chart, false)
}

/// `render` with a logarithmic x axis too (log-log when `chart.log_y`), for costs against sizes
/// that span orders of magnitude.
pub fn render_log_x(chart: &Chart) -> String {
    draw(chart, true)
}

fn draw(chart: &Chart, log_x: bool) -> String {
    let all: Vec<Point> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(|p| p.x.is_finite() && p.y.is_finite())
        .collect();
    let mut x_max = all.iter().map(|p| p.x).fold(0.0, f64::max);
    if let Some((value, _)) = chart.marker.as_ref().filter(|(v, _)| v.is_finite()) {
        x_max = x_max.max(*value);
    }
    let mut y_max = all.iter().map(|p| p.y).fold(0.0, f64::max);
    if let Some((value, _)) = chart.reference {
        y_max = y_max.max(value);
    }
    if chart.diagonal {
        y_max = y_max.max(x_max);
    }
    let x_axis = if log_x {
        let x_min = all.iter().map(|p| p.x).filter(|x| *x > 0.0).fold(f64::INFINITY, f64::min);
        Axis::log(if x_min.is_finite() { x_min } else { 1.0 }, x_max)
    } else {
        Axis::linear(x_max)
    };
    let y_axis = if chart.log_y {
        Axis::log(all.iter().map(|p| p.y).filter(|y| *y > 0.0).fold(f64::INFINITY, f64::min).min(1.0), y_max)
    } else {
        Axis::linear(y_max)
    };
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let px = |x: f64| LEFT + x_axis.fraction(x) * plot_w;
    let py = |y: f64| TOP + (1.0 - y_axis.fraction(y)) * plot_h;

    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="11">"#
    );
    let _ = write!(svg, r#"<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#);
    let _ = write!(
        svg,
        r#"<text x="{}" y="20" font-size="14" text-anchor="middle">{}</text>"#,
        WIDTH / 2.0,
        escape(&chart.title)
    );
    for tick in x_axis.ticks() {
        let x = px(tick);
        let _ = write!(svg, r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#eee"/>"##, TOP + plot_h);
        let _ = write!(
            svg,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            TOP + plot_h + 14.0,
            label(tick)
        );
    }
    for tick in y_axis.ticks() {
        let y = py(tick);
        let _ = write!(svg, r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eee"/>"##, LEFT + plot_w);
        let _ =
            write!(svg, r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#, LEFT - 6.0, y + 4.0, label(tick));
    }
    let _ =
        write!(svg, r##"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>"##);
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 10.0,
        escape(&chart.x_label)
    );
    let _ = write!(
        svg,
        r#"<text x="14" y="{:.1}" text-anchor="middle" transform="rotate(-90 14 {:.1})">{}</text>"#,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0,
        escape(&chart.y_label)
    );
    if chart.diagonal {
        let end = x_axis.max.min(y_axis.max);
        let _ = write!(
            svg,
            r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#aaa" stroke-dasharray="4 4"/>"##,
            px(0.0),
            py(0.0),
            px(end),
            py(end)
        );
    }
    if let Some((value, text)) = &chart.reference {
        let y = py(*value);
        let _ = write!(
            svg,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#c0392b" stroke-dasharray="6 3"/>"##,
            LEFT + plot_w
        );
        let _ =
            write!(svg, r##"<text x="{:.1}" y="{:.1}" fill="#c0392b">{}</text>"##, LEFT + 4.0, y - 4.0, escape(text));
    }
    if let Some((value, text)) = chart.marker.as_ref().filter(|(v, _)| v.is_finite()) {
        let x = px(*value);
        let _ = write!(
            svg,
            r##"<line class="marker" x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#c0392b" stroke-dasharray="6 3"/>"##,
            TOP + plot_h
        );
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" fill="#c0392b" text-anchor="end">{}</text>"##,
            x - 4.0,
            TOP + plot_h - 6.0,
            escape(text)
        );
    }
    for series in &chart.series {
        let opacity = if series.faint { 0.45 } else { 1.0 };
        let dash = if series.dashed { r#" stroke-dasharray="6 3""# } else { "" };
        let points: Vec<String> = series
            .points
            .iter()
            .filter(|p| p.x.is_finite() && p.y.is_finite())
            .map(|p| format!("{:.1},{:.1}", px(p.x), py(p.y)))
            .collect();
        if points.len() > 1 {
            let _ = write!(
                svg,
                r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2" opacity="{opacity}"{dash}/>"#,
                points.join(" "),
                series.color
            );
        }
        let dots = if series.points.len() > DOTS_UP_TO { &[][..] } else { &series.points[..] };
        for p in dots.iter().filter(|p| p.x.is_finite() && p.y.is_finite()) {
            let fill = if p.ok { series.color } else { "white" };
            let _ = write!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{fill}" stroke="{}" stroke-width="1.5" opacity="{opacity}"/>"#,
                px(p.x),
                py(p.y),
                series.color
            );
        }
    }
    let mut legend_y = TOP + 14.0;
    for series in chart.series.iter().filter(|s| !s.faint) {
        let x = LEFT + 10.0;
        let _ = write!(
            svg,
            r#"<line x1="{x}" y1="{:.1}" x2="{}" y2="{:.1}" stroke="{}" stroke-width="2"{}/>"#,
            legend_y - 4.0,
            x + 18.0,
            legend_y - 4.0,
            series.color,
            if series.dashed { r#" stroke-dasharray="6 3""# } else { "" }
        );
        let _ = write!(svg, r#"<text x="{}" y="{legend_y:.1}">{}</text>"#, x + 24.0, escape(&series.label));
        legend_y += 15.0;
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(any(test, feature = "test-support"))]
pub mod tests {
    #[cfg(test)]
    use super::*;

    /// Tags balance and attributes are quoted: enough to know browsers will draw it.
    pub fn assert_well_formed(svg: &str) {
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{svg}");
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "non-finite numbers: {svg}");
        let mut open: Vec<String> = Vec::new();
        let mut rest = svg;
        while let Some(start) = rest.find('<') {
            let end = rest[start..].find('>').expect("unclosed tag") + start;
            let tag = &rest[start + 1..end];
            assert!(!tag.contains('<'), "tag inside a tag: {tag}");
            assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes in <{tag}>");
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(open.pop().as_deref(), Some(name), "closing </{name}>");
            } else if !tag.ends_with('/') {
                open.push(tag.split_whitespace().next().unwrap_or("").to_owned());
            }
            let text = &rest[end + 1..rest[end + 1..].find('<').map_or(rest.len(), |n| n + end + 1)];
            assert!(!text.contains('&') || text.contains("&amp;") || text.contains("&lt;"), "raw & in {text}");
            rest = &rest[end + 1..];
        }
        assert!(open.is_empty(), "unclosed: {open:?}");
    }

    #[cfg(test)]
    fn chart(log_y: bool, points: Vec<Point>) -> Chart {
        Chart {
            title: "p95 <latency> & rate".into(),
            x_label: "offered req/s".into(),
            y_label: "ms".into(),
            log_y,
            series: vec![
                Series {
                    label: "PostgreSQL".into(),
                    color: PG_COLOR,
                    points: points.clone(),
                    faint: false,
                    dashed: false,
                },
                Series { label: "MongoDB".into(), color: MONGO_COLOR, points, faint: true, dashed: true },
            ],
            reference: Some((50.0, "pass mark 50 ms".into())),
            diagonal: !log_y,
            marker: None,
        }
    }

    #[test]
    fn charts_are_well_formed_svg_with_escaped_text() {
        let points = vec![
            Point { x: 100.0, y: 2.5, ok: true },
            Point { x: 200.0, y: 40.0, ok: true },
            Point { x: 300.0, y: 1900.0, ok: false },
        ];
        for log_y in [true, false] {
            let svg = render(&chart(log_y, points.clone()));
            assert_well_formed(&svg);
            assert!(svg.contains("p95 &lt;latency&gt; &amp; rate"));
            assert_eq!(svg.matches("<circle").count(), 6);
            assert_eq!(svg.matches(r#"fill="white" stroke"#).count(), 2, "failed steps are hollow");
            assert_eq!(svg.matches("<text x=\"98\"").count(), 1, "only the first repeat gets a legend entry");
        }
    }

    #[test]
    fn empty_and_degenerate_series_still_render() {
        assert_well_formed(&render(&chart(true, Vec::new())));
        assert_well_formed(&render(&chart(
            true,
            vec![Point { x: 0.0, y: 0.0, ok: true }, Point { x: f64::NAN, y: 1.0, ok: true }],
        )));
    }

    #[test]
    fn a_log_log_chart_spans_the_decades_of_its_points() {
        let points = vec![Point { x: 1000.0, y: 1300.0, ok: true }, Point { x: 100_000.0, y: 43_000.0, ok: true }];
        let svg = render_log_x(&chart(true, points));
        assert_well_formed(&svg);
        for tick in [">1k<", ">10k<", ">100k<"] {
            assert!(svg.contains(tick), "x tick {tick} in {svg}");
        }
        assert_well_formed(&render_log_x(&chart(true, Vec::new())));
    }

    #[test]
    fn a_marker_stands_where_its_x_is_and_dense_series_have_no_dots() {
        let points: Vec<Point> = (0..=200).map(|i| Point { x: f64::from(i) / 20.0, y: 1.0, ok: true }).collect();
        let mut c = chart(false, points);
        c.marker = Some((5.0, "kill <both>".into()));
        let svg = render(&c);
        assert_well_formed(&svg);
        // x from 0 to 10: 5 is the plot's middle, LEFT + (WIDTH - LEFT - RIGHT) / 2.
        assert!(svg.contains(r#"<line class="marker" x1="342.0""#), "{svg}");
        assert!(svg.contains("kill &lt;both&gt;"));
        assert_eq!(svg.matches("<circle").count(), 0);
        c.marker = Some((f64::NAN, "none".into()));
        assert!(!render(&c).contains("class=\"marker\""));
    }

    #[test]
    fn ticks_are_round_numbers() {
        assert_eq!(tick_step(1000.0), 200.0);
        assert_eq!(tick_step(37.0), 10.0);
        assert_eq!(Axis::log(0.8, 1900.0).ticks(), [0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0]);
        assert_eq!(label(2000.0), "2k");
    }
}
